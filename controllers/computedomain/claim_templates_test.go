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
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/finalizer"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

const (
	testOperatorNS = "nvidia-dra"
	testUID        = "0f3c9a7e-1111-2222-3333-444455556666"
)

func testConfig() Config {
	return Config{OperatorNamespace: testOperatorNS}.WithDefaults()
}

// claimView is what a claim template says, flattened for comparison.
type claimView struct {
	Namespace, Name string
	Class           string
	Count           int64
	Driver          string
	Config          v1beta1.DeviceConfig
	Owner           *metav1.OwnerReference
	Labels          map[string]string
}

func viewOf(t *testing.T, rct *resourcev1.ResourceClaimTemplate) claimView {
	t.Helper()
	d := rct.Spec.Spec.Devices
	if len(d.Requests) != 1 || d.Requests[0].Exactly == nil || len(d.Config) != 1 || d.Config[0].Opaque == nil {
		t.Fatalf("claim template %s has not exactly one request and one opaque config: %+v", rct.Name, d)
	}
	if diff := cmp.Diff(d.Requests[0].Name, d.Config[0].Requests[0]); diff != "" || len(d.Config[0].Requests) != 1 {
		t.Errorf("config applies to %v, want the one request %q", d.Config[0].Requests, d.Requests[0].Name)
	}
	// The opaque parameters must pass the same strict decoder the kubelet plugin uses.
	cfg, err := v1beta1.DecodeConfig(d.Config[0].Opaque.Parameters.Raw)
	if err != nil {
		t.Fatalf("decode opaque parameters %s: %v", d.Config[0].Opaque.Parameters.Raw, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("opaque parameters do not validate: %v", err)
	}
	return claimView{
		Namespace: rct.Namespace, Name: rct.Name,
		Class:  d.Requests[0].Exactly.DeviceClassName,
		Count:  d.Requests[0].Exactly.Count,
		Driver: d.Config[0].Opaque.Driver,
		Config: cfg,
		Owner:  metav1.GetControllerOf(rct),
		Labels: rct.Labels,
	}
}

func TestWorkloadClaimTemplate(t *testing.T) {
	base := utiltesting.MakeComputeDomain("job", "team-a").UID(testUID).Channel("job-channel")
	owner := &metav1.OwnerReference{
		APIVersion: "resource.nvidia.com/v1beta1", Kind: "ComputeDomain", Name: "job", UID: testUID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
	labels := map[string]string{v1beta1.ManagedByLabelKey: v1beta1.ManagedByLabelValue, v1beta1.ComputeDomainLabelKey: testUID}
	channelConfig := func(mode v1beta1.ComputeDomainAllocationMode) *v1beta1.ComputeDomainChannelConfig {
		return &v1beta1.ComputeDomainChannelConfig{
			TypeMeta: metav1.TypeMeta{APIVersion: "resource.nvidia.com/v1beta1", Kind: "ComputeDomainChannelConfig"},
			DomainID: testUID, AllocationMode: mode,
		}
	}
	cases := map[string]struct {
		domain *v1beta1.ComputeDomain
		want   claimView
	}{
		"a domain without an allocation mode gets a Single channel template in its namespace, owned by it": {
			domain: base.Clone().Obj(),
			want: claimView{Namespace: "team-a", Name: "job-channel", Class: DefaultChannelDeviceClass, Count: 1,
				Driver: DefaultDriverName, Config: channelConfig(v1beta1.AllocationModeSingle), Owner: owner, Labels: labels},
		},
		"allocationMode All keeps its meaning in the opaque config": {
			domain: base.Clone().AllocationMode(v1beta1.AllocationModeAll).Obj(),
			want: claimView{Namespace: "team-a", Name: "job-channel", Class: DefaultChannelDeviceClass, Count: 1,
				Driver: DefaultDriverName, Config: channelConfig(v1beta1.AllocationModeAll), Owner: owner, Labels: labels},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rct, err := WorkloadClaimTemplate(tc.domain, testConfig())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, viewOf(t, rct)); diff != "" {
				t.Errorf("workload claim template (-want +got):\n%s", diff)
			}
		})
	}
}

// testScheme holds the Kubernetes and ComputeDomain types.
func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	return scheme
}

// newTestReconciler is a reconciler of testConfig that reads through c (the "cache") and live (the API
// server), with metrics in a registry of its own.
func newTestReconciler(t *testing.T, c client.Client, live client.Reader) *Reconciler {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReconciler(c, live, nil, m, testConfig(), Cluster{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCreateCalls counts the API calls reconciles send for a domain's workload claim template and PodGroup,
// with a cache that never shows them (it lags behind the controller's creates, and never holds a foreign
// object): a new domain's first pass creates each at once, without a live read, the template while its
// finalizer is being added; later passes read the API server instead of creating again, so a foreign template
// costs one HTTP 409 in the process, not one per pass.
func TestCreateCalls(t *testing.T) {
	foreign := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "job-channel"}}
	cases := map[string]struct {
		objects []client.Object
		passes  int
		// want are the calls of all passes, by kind.
		want map[string]createCalls
	}{
		"a new domain's first pass creates its objects at once, the template while its finalizer is added": {
			passes: 1,
			want:   map[string]createCalls{"ResourceClaimTemplate": {Creates: 1}, "PodGroup": {Creates: 1}},
		},
		"a pass whose cache has not seen the objects created reads the API server instead of creating again": {
			passes: 3,
			want:   map[string]createCalls{"ResourceClaimTemplate": {Creates: 1, LiveGets: 2}, "PodGroup": {Creates: 1, LiveGets: 2}},
		},
		"a foreign template costs one conflict in the process, not one per pass": {
			objects: []client.Object{foreign.DeepCopy()},
			passes:  3,
			want: map[string]createCalls{
				"ResourceClaimTemplate": {Creates: 1, AlreadyExists: 1, LiveGets: 3},
				"PodGroup":              {Creates: 1, LiveGets: 2},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			cd := utiltesting.MakeComputeDomain("job", "team-a").UID(testUID).Channel("job-channel").NumNodes(4).Obj()
			scheme := testScheme(t)
			server := fake.NewClientBuilder().WithScheme(scheme).
				WithObjects(append(append(tc.objects, cd), cliqueNodes("c.1", 4)...)...).
				WithStatusSubresource(&v1beta1.ComputeDomain{}).Build()
			got := map[string]createCalls{}
			var mu sync.Mutex
			// counted is the kind of the objects counted, "" for the others.
			counted := func(obj client.Object) string {
				switch obj.(type) {
				case *resourcev1.ResourceClaimTemplate, *schedulingv1beta1.PodGroup:
					gvk, err := apiutil.GVKForObject(obj, scheme)
					if err != nil {
						t.Fatal(err)
					}
					return gvk.Kind
				}
				return ""
			}
			count := func(kind string, f func(*createCalls)) {
				mu.Lock()
				defer mu.Unlock()
				c := got[kind]
				f(&c)
				got[kind] = c
			}
			createStarted := make(chan struct{})
			var startOnce sync.Once
			concurrent := true
			cache := interceptor.NewClient(server, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if counted(obj) != "" {
						return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
					}
					return c.Get(ctx, key, obj, opts...)
				},
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					kind := counted(obj)
					if kind == "" {
						return c.Create(ctx, obj, opts...)
					}
					startOnce.Do(func() { close(createStarted) })
					err := c.Create(ctx, obj, opts...)
					count(kind, func(g *createCalls) {
						g.Creates++
						if apierrors.IsAlreadyExists(err) {
							g.AlreadyExists++
						}
					})
					return err
				},
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					// The finalizer's patch waits for the template's create to start: sent one after the
					// other, it waits in vain.
					select {
					case <-createStarted:
					case <-time.After(2 * time.Second):
						mu.Lock()
						concurrent = false
						mu.Unlock()
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
			})
			live := interceptor.NewClient(server, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if kind := counted(obj); kind != "" {
						count(kind, func(g *createCalls) { g.LiveGets++ })
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
			r := newTestReconciler(t, cache, live)
			r.cluster.WorkloadAPI = true
			for range tc.passes {
				if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cd)}); err != nil {
					t.Fatalf("reconcile: %v", err)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("calls by kind (-want +got):\n%s", diff)
			}
			if !concurrent {
				t.Error("the finalizer's patch was sent after the template's create, not with it")
			}
			domain := &v1beta1.ComputeDomain{}
			if err := server.Get(ctx, client.ObjectKeyFromObject(cd), domain); err != nil {
				t.Fatal(err)
			}
			if !controllerutil.ContainsFinalizer(domain, finalizer.Name) {
				t.Errorf("finalizers %v, want %s", domain.Finalizers, finalizer.Name)
			}
		})
	}
}

// createCalls counts a test's API calls for the objects of one kind the controller makes for a domain.
type createCalls struct {
	// Creates are the create calls, AlreadyExists those answered with HTTP 409.
	Creates, AlreadyExists int
	// LiveGets are the reads from the API server, past the cache.
	LiveGets int
}
