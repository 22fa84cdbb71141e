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
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func TestDaemonSet(t *testing.T) {
	cd := utiltesting.MakeComputeDomain("job", "team-a").UID(testUID).Obj()
	ds := DaemonSet(cd, testConfig(), []string{"n1", "n2"})
	pod := ds.Spec.Template.Spec

	type view struct {
		Namespace, Name string
		UpdateStrategy  appsv1.DaemonSetUpdateStrategyType
		NodeSelector    map[string]string
		Claims          []corev1.PodResourceClaim
		ContainerClaims []corev1.ResourceClaim
		Image           string
		Command, Args   []string
		ServiceAccount  string
		Tolerations     []corev1.Toleration
	}
	want := view{
		Namespace:      testOperatorNS,
		Name:           "cd-" + testUID,
		UpdateStrategy: appsv1.OnDeleteDaemonSetStrategyType,
		Claims: []corev1.PodResourceClaim{{
			Name: "daemon", ResourceClaimTemplateName: ptr.To("cd-" + testUID + "-daemon"),
		}},
		ContainerClaims: []corev1.ResourceClaim{{Name: "daemon"}},
		Image:           "registry.example/cd:v1",
		Command:         []string{"compute-domain-daemon"},
		Args: []string{"--node-name=$(NODE_NAME)", "--pod-name=$(POD_NAME)", "--pod-namespace=$(POD_NAMESPACE)",
			"--pod-uid=$(POD_UID)", "--ip-address=$(POD_IP)"},
		ServiceAccount: DefaultDaemonServiceAccount,
		Tolerations:    []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
	}
	got := view{
		Namespace: ds.Namespace, Name: ds.Name, UpdateStrategy: ds.Spec.UpdateStrategy.Type, NodeSelector: pod.NodeSelector, Claims: pod.ResourceClaims,
		ContainerClaims: pod.Containers[0].Resources.Claims, Image: pod.Containers[0].Image,
		Command: pod.Containers[0].Command, Args: pod.Containers[0].Args, ServiceAccount: pod.ServiceAccountName,
		Tolerations: pod.Tolerations,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DaemonSet (-want +got):\n%s", diff)
	}

	sel, err := labels.ValidatedSelectorFromSet(ds.Spec.Selector.MatchLabels)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("selector %v does not match the pod template's labels %v", sel, ds.Spec.Template.Labels)
	}
	if ds.Spec.Template.Labels[v1beta1.ComputeDomainLabelKey] != testUID {
		t.Errorf("daemon pods are not labeled with the domain UID: %v", ds.Spec.Template.Labels)
	}
	// Every $(VAR) an argument uses is set from the downward API.
	env := map[string]bool{}
	for _, e := range pod.Containers[0].Env {
		if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil {
			t.Errorf("env %s is not from the downward API", e.Name)
		}
		env[e.Name] = true
	}
	for _, v := range []string{"NODE_NAME", "POD_NAME", "POD_NAMESPACE", "POD_UID", "POD_IP"} {
		if !env[v] {
			t.Errorf("env %s missing", v)
		}
	}
}

func TestDaemonSetMatches(t *testing.T) {
	cd := utiltesting.MakeComputeDomain("job", "team-a").UID(testUID).Obj()
	want := DaemonSet(cd, testConfig(), []string{"n1"})
	cases := map[string]struct {
		mutate func(*appsv1.DaemonSet)
		want   bool
	}{
		"the same DaemonSet matches": {mutate: func(*appsv1.DaemonSet) {}, want: true},
		"fields the API server defaults do not count": {
			mutate: func(ds *appsv1.DaemonSet) {
				ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
				ds.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst
				ds.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
			},
			want: true,
		},
		"a new daemon image is drift": {
			mutate: func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = "registry.example/cd:v0" },
		},
		"a changed node selector is drift": {
			mutate: func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"x": "y"} },
		},
		"another node list is drift": {
			mutate: func(ds *appsv1.DaemonSet) {
				ds.Spec.Template.Spec.Affinity.NodeAffinity = onNodes([]string{"n1", "n2"})
			},
		},
		"a rolling update strategy is drift": {
			mutate: func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType },
		},
		"a lost pod label is drift": {
			mutate: func(ds *appsv1.DaemonSet) { delete(ds.Spec.Template.Labels, v1beta1.ComputeDomainLabelKey) },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := want.DeepCopy()
			tc.mutate(got)
			if m := daemonSetMatches(got, want); m != tc.want {
				t.Errorf("daemonSetMatches = %v, want %v", m, tc.want)
			}
		})
	}
}

// TestDaemonSetRunsOnExactlyTheListedNodes matches the daemon pod template against nodes with the
// scheduler's and the DaemonSet controller's own node-affinity matcher.
func TestDaemonSetRunsOnExactlyTheListedNodes(t *testing.T) {
	cd := utiltesting.MakeComputeDomain("job", "team-a").UID(testUID).Obj()
	ds := DaemonSet(cd, testConfig(), []string{"rack1-n03", "rack2-n11"})
	pod := &corev1.Pod{Spec: ds.Spec.Template.Spec}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	for node, want := range map[string]bool{"rack1-n03": true, "rack2-n11": true, "rack1-n04": false, "rack2-n1": false} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"kubernetes.io/hostname": "rack1-n03"}}}
		got, err := affinity.Match(n)
		if err != nil {
			t.Fatalf("match %s: %v", node, err)
		}
		if got != want {
			t.Errorf("daemon on node %s: %v, want %v", node, got, want)
		}
	}
}
