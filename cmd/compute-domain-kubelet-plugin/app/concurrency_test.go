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
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin/kubelettest"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
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
	const node = "tray-1"
	const uidA, uidB = "aaaaaaaa-0000-0000-0000-00000000000a", "bbbbbbbb-0000-0000-0000-00000000000b"
	p, err := mock.LoadProfile("gb200-nvl72")
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp("", "cdkc") // unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	hostRoot, cdiRoot, reg, plugins := filepath.Join(base, "host"), filepath.Join(base, "cdi"), filepath.Join(base, "reg"), filepath.Join(base, "plg")
	if _, err := hostroot.Fake(hostRoot, p.FakeHostRootSpec(node)); err != nil {
		t.Fatal(err)
	}
	lib, err := mock.New(mock.Config{NodeName: node, Profile: "gb200-nvl72", Cluster: mock.DefaultClusterName})
	if err != nil {
		t.Fatal(err)
	}
	lib.Init()
	clique, err := nvml.NodeCliqueID(lib)
	if err != nil || clique == "" {
		t.Fatalf("clique %q, %v", clique, err)
	}
	domain := func(name, ns, uid string, channel int32, ready bool) *v1beta1.ComputeDomain {
		cd := cdtest.MakeComputeDomain(name, ns).UID(types.UID(uid)).Obj()
		if ready {
			cd.Status.Nodes = []v1beta1.ComputeDomainNode{{Name: node, CliqueID: clique, Status: v1beta1.ComputeDomainStatusReady}}
		}
		cd.Status.Cliques = []v1beta1.ComputeDomainClique{{CliqueID: clique, Channel: ptr.To(channel)}}
		return cd
	}
	claim := func(name, ns, uid, domainUID, slot string) *resourceapi.ResourceClaim {
		params := []byte(`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"` + domainUID + `"}`)
		return &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(uid)},
			Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
				Results: []resourceapi.DeviceRequestAllocationResult{{Request: "channel", Driver: computedomain.DefaultDriverName, Pool: node, Device: slot}},
				Config: []resourceapi.DeviceAllocationConfiguration{{Source: resourceapi.AllocationConfigSourceClaim, DeviceConfiguration: resourceapi.DeviceConfiguration{
					Opaque: &resourceapi.OpaqueDeviceConfiguration{Driver: computedomain.DefaultDriverName, Parameters: runtime.RawExtension{Raw: params}},
				}}},
			}}},
		}
	}
	domains := &staticDomains{m: map[types.UID]*v1beta1.ComputeDomain{}}
	domains.set(domain("a", "team-a", uidA, 3, false))
	domains.set(domain("b", "team-b", uidB, 5, true))
	kube := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "node-uid"}},
		claim("wa", "team-a", "claim-a", uidA, "channel-0"), claim("wb", "team-b", "claim-b", uidB, "channel-1"))
	c := &cluster{kube: kube, domains: domains, start: func(context.Context) error { return nil }}
	args := []string{"--node-name=" + node, "--operator-namespace=nvidia-dra", "--nvml=mock", "--nvml-mock-profile=gb200-nvl72", "--nvml-mock-fault-file=",
		"--host-root=" + hostRoot, "--cdi-root=" + cdiRoot, "--kubelet-registrar-directory-path=" + reg, "--kubelet-plugins-directory-path=" + plugins}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, noEnv, func(*options) (*cluster, error) { return c, nil }) }()
	_, dra := kubelettest.Register(ctx, t, filepath.Join(reg, "compute-domain.nvidia.com-reg.sock"), done)

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
