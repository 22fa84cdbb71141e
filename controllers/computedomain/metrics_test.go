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
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func readyCondition(status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: v1beta1.ComputeDomainConditionReady, Status: status, Reason: "X"}
}

func TestMetricsFormationAndConditions(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	// A second set of metrics in its own registry must not collide: nothing is process-global.
	if _, err := NewMetrics(prometheus.NewRegistry()); err != nil {
		t.Fatalf("second instance: %v", err)
	}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	a := utiltesting.MakeComputeDomain("a", "ns").UID("uid-a").Condition(readyCondition(metav1.ConditionFalse)).Obj()
	m.observeWorkload(a, 0, t0.Add(-time.Second)) // no node yet: formation has not started
	m.observeWorkload(a, 2, t0)                   // the first pods are bound: formation starts
	m.observeWorkload(a, 4, t0.Add(time.Second))  // more nodes later do not move the start
	m.observeDomain(a, t0.Add(3*time.Second))     // not Ready: no formation yet
	aReady := a.DeepCopy()
	aReady.Status.Conditions = []metav1.Condition{readyCondition(metav1.ConditionTrue)}
	m.observeDomain(aReady, t0.Add(5*time.Second))
	m.observeDomain(aReady, t0.Add(50*time.Second)) // formed once: not observed again
	b := utiltesting.MakeComputeDomain("b", "ns").UID("uid-b").Condition(readyCondition(metav1.ConditionFalse)).Obj()
	m.observeDomain(b, t0)
	// Ready without a workload seen by this process (a controller restarted mid-formation): not observed.
	c := utiltesting.MakeComputeDomain("c", "ns").UID("uid-c").Condition(readyCondition(metav1.ConditionTrue)).Obj()
	m.observeDomain(c, t0)

	want := map[string]float64{
		`computedomain_domains{condition="Ready",status="False"}`: 1,
		`computedomain_domains{condition="Ready",status="True"}`:  2,
		`computedomain_formation_seconds_count`:                   1,
		`computedomain_formation_seconds_sum`:                     5,
	}
	if diff := cmp.Diff(want, gather(t, reg, "computedomain_domains", "computedomain_formation_seconds")); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}

	m.forgetDomain("uid-a")
	m.forgetDomain("uid-c")
	want = map[string]float64{`computedomain_domains{condition="Ready",status="False"}`: 1}
	if diff := cmp.Diff(want, gather(t, reg, "computedomain_domains")); diff != "" {
		t.Errorf("metrics after the domain is gone (-want +got):\n%s", diff)
	}
	m.forgetNamed(types.NamespacedName{Namespace: "ns", Name: "b"})
	if diff := cmp.Diff(map[string]float64{}, gather(t, reg, "computedomain_domains")); diff != "" {
		t.Errorf("metrics after a domain gone without its finalizer (-want +got):\n%s", diff)
	}
}

// Channels per clique count the domains whose status holds a channel there; a domain gone, by UID or by name,
// holds none.
func TestMetricsChannelsPerClique(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	withChannel := func(clique string, channel int32) v1beta1.ComputeDomainClique {
		return v1beta1.ComputeDomainClique{CliqueID: clique, Channel: &channel}
	}
	m.observeDomain(utiltesting.MakeComputeDomain("a", "ns").UID("uid-a").Clique(withChannel("u.0", 0)).Clique(withChannel("u.1", 0)).Obj(), now)
	m.observeDomain(utiltesting.MakeComputeDomain("b", "ns").UID("uid-b").Clique(withChannel("u.0", 1)).Obj(), now)
	// A clique still waiting for its channel holds none.
	m.observeDomain(utiltesting.MakeComputeDomain("c", "ns").UID("uid-c").Clique(v1beta1.ComputeDomainClique{CliqueID: "u.1"}).Obj(), now)
	want := map[string]float64{
		`computedomain_clique_channels{clique="u.0"}`: 2,
		`computedomain_clique_channels{clique="u.1"}`: 1,
	}
	if diff := cmp.Diff(want, gather(t, reg, "computedomain_clique_channels")); diff != "" {
		t.Errorf("channels per clique (-want +got):\n%s", diff)
	}

	// A domain's later status replaces its cliques.
	m.observeDomain(utiltesting.MakeComputeDomain("a", "ns").UID("uid-a").Clique(withChannel("u.1", 0)).Obj(), now)
	m.forgetDomain("uid-b")
	m.forgetNamed(types.NamespacedName{Namespace: "ns", Name: "c"})
	want = map[string]float64{`computedomain_clique_channels{clique="u.1"}`: 1}
	if diff := cmp.Diff(want, gather(t, reg, "computedomain_clique_channels")); diff != "" {
		t.Errorf("channels per clique after changes (-want +got):\n%s", diff)
	}
}

// gather returns the named metric families as series → value (histograms as _count and _sum).
func gather(t *testing.T, g prometheus.Gatherer, names ...string) map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	wanted := map[string]bool{}
	for _, n := range names {
		wanted[n] = true
	}
	out := map[string]float64{}
	for _, f := range families {
		if !wanted[f.GetName()] {
			continue
		}
		for _, mt := range f.GetMetric() {
			var labels []string
			for _, l := range mt.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			series := f.GetName()
			if len(labels) > 0 {
				series += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case mt.GetHistogram() != nil:
				out[series+"_count"] = float64(mt.GetHistogram().GetSampleCount())
				out[series+"_sum"] = mt.GetHistogram().GetSampleSum()
			case mt.GetGauge() != nil:
				out[series] = mt.GetGauge().GetValue()
			case mt.GetCounter() != nil:
				out[series] = mt.GetCounter().GetValue()
			}
		}
	}
	return out
}

func TestCountingClient(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	c := m.instrument(fake.NewClientBuilder().WithScheme(scheme).Build())
	ctx := context.Background()
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "op"}}
	if err := c.Create(ctx, ds.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, ds.DeepCopy()); err == nil {
		t.Fatal("second create succeeded")
	}
	if err := c.Delete(ctx, ds.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		`computedomain_controller_api_writes_total{kind="DaemonSet",verb="create"}`:    2,
		`computedomain_controller_api_writes_total{kind="DaemonSet",verb="delete"}`:    1,
		`computedomain_controller_api_conflicts_total{kind="DaemonSet",verb="create"}`: 1,
	}
	if diff := cmp.Diff(want, gather(t, reg, "computedomain_controller_api_writes_total", "computedomain_controller_api_conflicts_total")); diff != "" {
		t.Errorf("write metrics (-want +got):\n%s", diff)
	}
}
