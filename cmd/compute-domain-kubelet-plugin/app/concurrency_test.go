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

package app

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin/kubelettest"
	cdtest "github.com/computedomain-operator/computedomain-operator/internal/testing"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/computedomain"
)

// TestAWaitingClaimDoesNotDelayAnotherPodsPrepare: the kubelet prepares the
// pods of a node concurrently, one NodePrepareResources call per pod. While
// one pod's channel claim waits inside its call for its node's place in
// domain A (default wait, 30 s), another pod's claim of domain B, Ready on
// the node, is prepared at once: the helper does not serialize this plugin's
// calls. Then A lists the node and the waiting call succeeds: one call each.
func TestAWaitingClaimDoesNotDelayAnotherPodsPrepare(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	const uidA, uidB = "aaaaaaaa-0000-0000-0000-00000000000a", "bbbbbbbb-0000-0000-0000-00000000000b"
	f := newTray(t)
	node, clique := f.node, f.clique
	domain := func(name, ns, uid string, channel int32, ready bool) *v1beta1.ComputeDomain {
		cd := cdtest.MakeComputeDomain(name, ns).UID(types.UID(uid)).Obj()
		if ready {
			cd.Status.Nodes = []v1beta1.ComputeDomainNode{{Name: node, CliqueID: clique, Status: v1beta1.ComputeDomainStatusReady}}
		}
		cd.Status.Cliques = []v1beta1.ComputeDomainClique{{CliqueID: clique, Channel: ptr.To(channel)}}
		return cd
	}
	domains := &staticDomains{m: map[types.UID]*v1beta1.ComputeDomain{}}
	domains.set(domain("a", "team-a", uidA, 3, false))
	domains.set(domain("b", "team-b", uidB, 5, true))
	kube := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "node-uid"}},
		f.channelClaim("wa", "team-a", "claim-a", uidA, "channel-0"), f.channelClaim("wb", "team-b", "claim-b", uidB, "channel-1"))
	c := &cluster{kube: kube, domains: domains, start: func(context.Context) error { return nil }}
	done := make(chan error, 1)
	go func() { done <- run(ctx, f.args(), noEnv, func(*options) (*cluster, error) { return c, nil }) }()
	_, dra := kubelettest.Register(ctx, t, filepath.Join(f.reg, "compute-domain.nvidia.com-reg.sock"), done)

	type result struct {
		resp *drapb.NodePrepareResourcesResponse
		err  error
	}
	prepareA := make(chan result, 1)
	go func() {
		resp, err := dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: "team-a", Name: "wa", Uid: "claim-a"}}})
		prepareA <- result{resp, err}
	}()
	time.Sleep(300 * time.Millisecond) // pod a's claim waits now

	start := time.Now()
	respB, err := dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: "team-b", Name: "wb", Uid: "claim-b"}}})
	if err != nil || respB.Claims["claim-b"] == nil || respB.Claims["claim-b"].Error != "" {
		t.Fatalf("prepare of pod b's claim: %v %+v", err, respB)
	}
	tookB := time.Since(start)
	select {
	case r := <-prepareA:
		t.Fatalf("pod b's prepare returned only after pod a's, which ended with %+v %v: the calls were serialized", r.resp, r.err)
	default:
	}
	if tookB > 5*time.Second {
		t.Errorf("pod b's prepare took %s while pod a's waited", tookB)
	}

	domains.set(domain("a", "team-a", uidA, 3, true)) // the controller lists the node in domain a
	select {
	case r := <-prepareA:
		if r.err != nil || r.resp.Claims["claim-a"] == nil || r.resp.Claims["claim-a"].Error != "" || len(r.resp.Claims["claim-a"].Devices) != 1 {
			t.Fatalf("pod a's prepare once its node joined: %+v %v", r.resp, r.err)
		}
	case <-time.After(computedomain.DefaultReadyWait):
		t.Fatal("pod a's prepare did not return once its node joined domain a")
	}
	kubelettest.PublishedDevices(ctx, t, kube, 32+16) // the plugin is all up before it stops
	kubelettest.Unprepare(ctx, t, dra, "team-a", "wa", "claim-a")
	kubelettest.Unprepare(ctx, t, dra, "team-b", "wb", "claim-b")
	cancel()
	kubelettest.Returned(t, done)
}
