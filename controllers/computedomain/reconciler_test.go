// Copyright The computedomain-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

package computedomain

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

// TestReconcileResultAndStatus runs one reconcile of a domain against a fake API server that fails one
// kind of request, and checks what Reconcile returns and what status the server holds afterwards: the
// status is written whatever a phase returned, as long as the members could be read; a result is never
// returned together with an error (controller-runtime ignores it then).
func TestReconcileResultAndStatus(t *testing.T) {
	errInjected := errors.New("injected")
	foreignTemplate := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "job-channel"}}
	previous := utiltesting.MakeComputeDomainNode("n1", "10.0.0.1", "c.1", 3, v1beta1.ComputeDomainStatusNotReady)
	cases := map[string]struct {
		objects []client.Object
		funcs   interceptor.Funcs
		// wantResult and wantErr are what Reconcile returns (wantErr: a substring, "" for none).
		wantResult ctrl.Result
		wantErr    string
		// wantReady is the Ready condition's reason on the server ("" for no condition: no status written).
		wantReady string
	}{
		"a domain blocked by a foreign claim template is looked at again after blockedRetry": {
			objects:    []client.Object{foreignTemplate.DeepCopy()},
			wantResult: ctrl.Result{RequeueAfter: blockedRetry},
			wantReady:  v1beta1.ComputeDomainReasonClaimTemplateConflict,
		},
		"a blocked domain whose status write fails returns the error alone": {
			objects: []client.Object{foreignTemplate.DeepCopy()},
			funcs: interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
				return errInjected
			}},
			wantErr: "write status of ComputeDomain team-a/job",
		},
		"a domain whose workload claims cannot be listed still gets its status": {
			funcs: interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if _, ok := list.(*resourcev1.ResourceClaimList); ok {
					return errInjected
				}
				return c.List(ctx, list, opts...)
			}},
			wantErr:   "list workload ResourceClaims of team-a/job",
			wantReady: v1beta1.ComputeDomainReasonNoWorkload,
		},
		"a domain whose IMEX daemons cannot be listed keeps its status: one computed without them would drop the nodes' indices": {
			funcs: interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if _, ok := list.(*corev1.PodList); ok {
					return errInjected
				}
				return c.List(ctx, list, opts...)
			}},
			wantErr: "list the long-lived IMEX daemon pods",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			cd := utiltesting.MakeComputeDomain("job", "team-a").UID(testUID).Generation(2).Node(previous).Obj()
			server := fake.NewClientBuilder().WithScheme(testScheme(t)).
				WithObjects(append(tc.objects, cd)...).
				WithStatusSubresource(&v1beta1.ComputeDomain{}).Build()
			r := newTestReconciler(t, interceptor.NewClient(server, tc.funcs), server)

			result, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "job"}})
			if diff := cmp.Diff(tc.wantResult, result); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}

			got := &v1beta1.ComputeDomain{}
			if err := server.Get(ctx, client.ObjectKeyFromObject(cd), got); err != nil {
				t.Fatal(err)
			}
			var ready string
			if c := meta.FindStatusCondition(got.Status.Conditions, v1beta1.ComputeDomainConditionReady); c != nil {
				ready = c.Reason
			}
			if ready != tc.wantReady {
				t.Errorf("Ready condition reason %q, want %q", ready, tc.wantReady)
			}
			if tc.wantReady == "" {
				if diff := cmp.Diff(cd.Status, got.Status); diff != "" {
					t.Errorf("status changed without a status write (-before +after):\n%s", diff)
				}
			} else if got.Status.ObservedGeneration != 2 {
				t.Errorf("status.observedGeneration %d, want 2", got.Status.ObservedGeneration)
			}
		})
	}
}

func TestJoinErrors(t *testing.T) {
	a, b, c := errors.New("a"), errors.New("b"), errors.New("c")
	cases := map[string]struct {
		errs []error
		want string // "" for nil
	}{
		"no errors at all is nil":             {errs: []error{nil, nil}},
		"one error reads as itself":           {errs: []error{nil, a}, want: "a"},
		"a phase's aggregate is flattened in": {errs: []error{joinErrors(a, b), nil, c}, want: "[a, b, c]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if err := joinErrors(tc.errs...); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("joinErrors = %q, want %q", got, tc.want)
			}
		})
	}
}
