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
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin/kubelettest"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
	cdtest "github.com/computedomain-operator/computedomain-operator/internal/testing"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/computedomain"
)

func noEnv(string) (string, bool) { return "", false }

func TestParseRejects(t *testing.T) {
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		// The flags every plugin has are tested in internal/draplugin.
		"a shared flag is checked too": {args: []string{"--node-name=n", "--cdi-root=cdi"}, wantErr: `--cdi-root "cdi": must be an absolute path`},
		"too many slots":               {args: []string{"--node-name=n", "--channel-slots=120", "--daemon-slots=16"}, wantErr: "together at most 128"},
		"a ready wait past the limit":  {args: []string{"--node-name=n", "--ready-wait=40s"}, wantErr: "--ready-wait 40s: must be more than 0 and at most 35s"},
		"no channel slots":             {args: []string{"--node-name=n", "--channel-slots=0"}, wantErr: "each at least 1"},
		"no operator namespace":        {args: []string{"--node-name=n"}, wantErr: `--operator-namespace "": must be a namespace name (or set POD_NAMESPACE)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := parse(tc.args, noEnv); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// staticDomains is the plugin's domain cache: set changes a domain and
// notifies as the informer does.
type staticDomains struct {
	mu sync.Mutex
	m  map[types.UID]*v1beta1.ComputeDomain
	computedomain.DomainChanges
}

func (s *staticDomains) set(cd *v1beta1.ComputeDomain) {
	s.mu.Lock()
	s.m[cd.UID] = cd.DeepCopy()
	s.mu.Unlock()
	s.Notify(cd.UID)
}

func (s *staticDomains) Hold(context.Context, string) (func(), error) { return func() {}, nil }

func (s *staticDomains) DomainByUID(_ context.Context, namespace string, uid types.UID) (*v1beta1.ComputeDomain, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cd, ok := s.m[uid]; ok && (namespace == "" || cd.Namespace == namespace) {
		return cd.DeepCopy(), nil
	}
	return nil, nil
}

// tray is one GB200 tray for the tests that drive the plugin over its sockets: a fake host root, CDI and
// kubelet directories (under a short temporary path: unix socket paths are limited to 108 bytes) and the
// tray's NVLink clique as mock NVML reports it.
type tray struct {
	node, hostRoot, cdiRoot, reg, plugins, clique string
}

func newTray(t *testing.T) tray {
	t.Helper()
	f := tray{node: "tray-1"}
	p, err := mock.LoadProfile("gb200-nvl72")
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp("", "cdkp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	f.hostRoot, f.cdiRoot, f.reg, f.plugins = filepath.Join(base, "host"), filepath.Join(base, "cdi"), filepath.Join(base, "reg"), filepath.Join(base, "plg")
	if _, err := hostroot.Fake(f.hostRoot, p.FakeHostRootSpec(f.node)); err != nil {
		t.Fatal(err)
	}
	lib, err := mock.New(mock.Config{NodeName: f.node, Profile: "gb200-nvl72", Cluster: mock.DefaultClusterName})
	if err != nil {
		t.Fatal(err)
	}
	lib.Init()
	if f.clique, err = nvml.NodeCliqueID(lib); err != nil || f.clique == "" {
		t.Fatalf("clique %q, %v", f.clique, err)
	}
	return f
}

// args are the plugin's flags on the tray.
func (f tray) args() []string {
	return []string{"--node-name=" + f.node, "--operator-namespace=nvidia-dra", "--nvml=mock", "--nvml-mock-profile=gb200-nvl72", "--nvml-mock-fault-file=",
		"--host-root=" + f.hostRoot, "--cdi-root=" + f.cdiRoot, "--kubelet-registrar-directory-path=" + f.reg, "--kubelet-plugins-directory-path=" + f.plugins}
}

// channelClaim is a workload channel claim of domainUID allocated the tray's channel slot.
func (f tray) channelClaim(name, ns string, uid types.UID, domainUID, slot string) *resourceapi.ResourceClaim {
	params := `{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"` + domainUID + `"}`
	return cdtest.MakeResourceClaim(name, ns).UID(uid).Device("channel", computedomain.DefaultDriverName, f.node, slot).
		Config(resourceapi.AllocationConfigSourceClaim, computedomain.DefaultDriverName, params).Obj()
}

// TestServeAsSeenByTheKubelet drives a running plugin the way the kubelet
// does, over its sockets: a workload claim of a ready domain gets the
// domain's channel, the node is labeled for the domain, and unprepare
// removes both.
func TestServeAsSeenByTheKubelet(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := newTray(t)
	node, clique := f.node, f.clique

	const domainUID = "11111111-2222-3333-4444-555555555555"
	cd := cdtest.MakeComputeDomain("train", "team-a").UID(domainUID).Obj()
	cd.Status.Nodes = []v1beta1.ComputeDomainNode{{Name: node, CliqueID: clique, Status: v1beta1.ComputeDomainStatusReady}}
	cd.Status.Cliques = []v1beta1.ComputeDomainClique{{CliqueID: clique, Channel: ptr.To[int32](9)}}
	claim := f.channelClaim("worker-0-channel", "team-a", "claim-1", domainUID, "channel-0")
	kube := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "node-uid"}}, claim)
	c := &cluster{kube: kube, domains: &staticDomains{m: map[types.UID]*v1beta1.ComputeDomain{domainUID: cd}}, start: func(context.Context) error { return nil }}
	done := make(chan error, 1)
	go func() { done <- run(ctx, f.args(), noEnv, func(*options) (*cluster, error) { return c, nil }) }()

	regSock := filepath.Join(f.reg, "compute-domain.nvidia.com-reg.sock")
	_, dra := kubelettest.Register(ctx, t, regSock, done)
	resp, err := dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: "team-a", Name: "worker-0-channel", Uid: "claim-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Claims["claim-1"]
	if r == nil || r.Error != "" || len(r.Devices) != 1 {
		t.Fatalf("prepare response %+v", resp)
	}
	view, err := cdi.Resolve(f.cdiRoot, r.Devices[0].CdiDeviceIds...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(view.DeviceNodes, " ") != "/dev/nvidia-caps-imex-channels/channel9" {
		t.Errorf("container devices %v, want the domain's channel9", view.DeviceNodes)
	}
	kubelettest.PublishedDevices(ctx, t, kube, 32+16) // channel and daemon slots

	kubelettest.Unprepare(ctx, t, dra, "team-a", "worker-0-channel", "claim-1")
	// The controller places the daemons from the claims' allocations: the plugin never writes its Node.
	for _, a := range kube.Actions() {
		if a.GetResource().Resource == "nodes" && a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("the plugin wrote its Node: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if _, err := cdi.Resolve(f.cdiRoot, r.Devices[0].CdiDeviceIds...); err == nil {
		t.Error("the claim's CDI device still resolves after unprepare")
	}
	cancel()
	kubelettest.Returned(t, done)
}
