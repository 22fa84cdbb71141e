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

package processkill

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/computedomain"
)

const cdDriver = v1beta1.ComputeDomainDriverName

// TestComputeDomainPluginSurvivesSIGKILL kills the compute-domain kubelet plugin process with SIGKILL at
// random crash points and random moments of prepares and unprepares of two domains' daemon claims and
// channel claims (Single and All) on one GB200 tray, driven by the kubelet's DRA manager over the plugin's
// gRPC socket; again while it starts (its sweep of IMEX config directories) and recovers. The node then holds
// every claim the script left prepared exactly once, each channel claim sees its own domain's channel only, no
// slot is in two claims, and no CDI spec or IMEX config directory outlives its claims. PROCESS_KILLS sets the
// number of kills (default 200), CRASH_SEED the seed.
func TestComputeDomainPluginSurvivesSIGKILL(t *testing.T) {
	harness(t, &cdKind{}, 200, 6, []string{"prepare-started", "cdi-written", "unprepare-cdi-deleted", "unprepare-claim-deleted", "timer"})
}

// cdKind is the compute-domain plugin on a GB200 tray with two ready domains, channel 6 (team-a) and 7
// (team-b) in the tray's clique.
type cdKind struct {
	domains map[string]*v1beta1.ComputeDomain // by namespace
}

func (*cdKind) binary() string { return "compute-domain-kubelet-plugin" }
func (*cdKind) driver() string { return cdDriver }

func (*cdKind) args(n *node) []string {
	return []string{"--node-name=" + n.name, "--kubeconfig=" + cluster.kubeconfig, "--operator-namespace=nvidia-dra", "--nvml=mock",
		"--nvml-mock-profile=gb200-nvl72", "--nvml-mock-fault-file=", "--host-root=" + n.hostRoot, "--cdi-root=" + n.cdiRoot,
		"--kubelet-registrar-directory-path=" + n.reg, "--kubelet-plugins-directory-path=" + n.plugins}
}

var cdChannels = map[string]int32{"team-a": 6, "team-b": 7}

func (k *cdKind) prepareNode(ctx context.Context, t *testing.T, n *node, _ *rand.Rand) {
	t.Helper()
	p, err := mock.LoadProfile("gb200-nvl72")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hostroot.Fake(n.hostRoot, p.FakeHostRootSpec(n.name)); err != nil {
		t.Fatal(err)
	}
	lib, err := mock.New(mock.Config{NodeName: n.name, Profile: "gb200-nvl72", Cluster: mock.DefaultClusterName})
	if err != nil {
		t.Fatal(err)
	}
	lib.Init()
	clique, err := nvml.NodeCliqueID(lib)
	lib.Shutdown()
	if err != nil {
		t.Fatal(err)
	}
	// Two domains the controller has formed on this tray.
	k.domains = map[string]*v1beta1.ComputeDomain{}
	for ns, channel := range cdChannels {
		cd := utiltesting.MakeComputeDomain(n.name, ns).NumNodes(1).Obj()
		if err := cluster.ctrl.Create(ctx, cd); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cluster.ctrl.Delete(context.Background(), cd) })
		cd.Status.Nodes = []v1beta1.ComputeDomainNode{{Name: n.name, CliqueID: clique, Status: v1beta1.ComputeDomainStatusReady}}
		cd.Status.Cliques = []v1beta1.ComputeDomainClique{{CliqueID: clique, Channel: ptr.To(channel)}}
		cd.Status.Status = v1beta1.ComputeDomainStatusReady
		if err := cluster.ctrl.Status().Update(ctx, cd); err != nil {
			t.Fatal(err)
		}
		k.domains[ns] = cd
	}
}

func (k *cdKind) claims(ctx context.Context, t *testing.T, n *node) []*resourceapi.ResourceClaim {
	t.Helper()
	a, b := string(k.domains["team-a"].UID), string(k.domains["team-b"].UID)
	daemon := func(name string, slot int, domain string) *resourceapi.ResourceClaim {
		return utiltesting.MakeResourceClaim(name, "nvidia-dra").Request("daemon", "compute-domain-daemon.nvidia.com").Device("daemon", cdDriver, n.name, computedomain.DaemonDeviceName(slot)).
			Config(resourceapi.AllocationConfigSourceClaim, cdDriver, utiltesting.MakeComputeDomainDaemonConfig(domain)).Obj()
	}
	channel := func(name, ns string, slot int, domain string, mode v1beta1.ComputeDomainAllocationMode) *resourceapi.ResourceClaim {
		cfg := utiltesting.MakeComputeDomainChannelConfig(domain).Obj()
		cfg.AllocationMode = mode
		return utiltesting.MakeResourceClaim(name, ns).Request("channel", "compute-domain-default-channel.nvidia.com").Device("channel", cdDriver, n.name, computedomain.ChannelDeviceName(slot)).
			Config(resourceapi.AllocationConfigSourceClaim, cdDriver, cfg).Obj()
	}
	want := []*resourceapi.ResourceClaim{
		daemon("daemon-a", 0, a), daemon("daemon-b", 1, b),
		channel("w-a1", "team-a", 0, a, ""), channel("w-a2", "team-a", 1, a, v1beta1.AllocationModeAll), channel("w-b", "team-b", 2, b, ""),
	}
	return want
}

func (k *cdKind) check(ctx context.Context, t *testing.T, n *node, prepared []*resourceapi.ResourceClaim, trial string) {
	t.Helper()
	want := map[string]*resourceapi.ResourceClaim{}
	daemonDomains := map[types.UID]bool{}
	for _, c := range prepared {
		want[string(c.UID)] = c
		if c.Namespace == "nvidia-dra" {
			daemonDomains[k.domains[map[string]string{"daemon-a": "team-a", "daemon-b": "team-b"}[c.Name]].UID] = true
		}
	}
	checkRecordedAndSpecs(t, n, prepared, trial)
	// The plugin was started before this check, so its sweep has run: an IMEX config directory exists
	// exactly for the domains with a prepared daemon claim.
	for _, cd := range k.domains {
		_, err := os.Stat(filepath.Join(n.dataDir(), "domains", string(cd.UID)))
		if exists := err == nil; exists != daemonDomains[cd.UID] {
			t.Errorf("%s: IMEX config directory of domain %s/%s exists: %v, want %v (daemon claim prepared)", trial, cd.Namespace, cd.Name, exists, daemonDomains[cd.UID])
		}
	}
	// Prepared exactly once, and each channel claim sees its own domain's channel only.
	for _, c := range prepared {
		res := prepareOverSocket(ctx, t, n, c)
		if res.GetError() != "" {
			t.Errorf("%s: repeated prepare of %s: %s", trial, c.Name, res.GetError())
			continue
		}
		if c.Namespace == "nvidia-dra" {
			continue
		}
		var ids []string
		for _, d := range res.Devices {
			ids = append(ids, d.CdiDeviceIds...)
		}
		view, err := cdi.Resolve(n.cdiRoot, ids...)
		if err != nil {
			t.Errorf("%s: CDI devices of %s: %v", trial, c.Name, err)
			continue
		}
		wantNode := "/dev/nvidia-caps-imex-channels/channel" + strconv.Itoa(int(cdChannels[c.Namespace]))
		if !slices.Equal(view.DeviceNodes, []string{wantNode}) {
			t.Errorf("%s: claim %s sees channels %v, want only %s", trial, c.Name, view.DeviceNodes, wantNode)
		}
	}
}
