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
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	cdtest "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

const (
	uidA = types.UID("aaaaaaaa-0000-0000-0000-00000000000a")
	uidB = types.UID("bbbbbbbb-0000-0000-0000-00000000000b")
)

func TestPrepare(t *testing.T) {
	type want struct {
		err       error  // errors.Is target; nil: success
		errText   string // substring of the error
		view      cdi.ContainerView
		claimSate checkpoint.Status // "" : not in the checkpoint
	}
	cases := map[string]struct {
		profile string
		// hostChannels is how many channel entries the node has up front.
		hostChannels int
		domain       func(clique string) *apiv1beta1.ComputeDomain
		claim        *resourceapi.ResourceClaim
		want         want
	}{
		"a ready domain's channel is injected, whatever slot was allocated": {
			profile: "gb200-nvl72",
			domain: func(c string) *apiv1beta1.ComputeDomain {
				return domain("a", "team-a", uidA, c, ptr.To[int32](7), testNode)
			},
			claim: channelClaim("w", "team-a", "claim-1", 0, uidA, ""),
			want: want{
				view:      cdi.ContainerView{DeviceNodes: []string{"/dev/nvidia-caps-imex-channels/channel7"}},
				claimSate: checkpoint.PrepareCompleted,
			},
		},
		"allocationMode All injects the domain's channel, never the node's other channels (here 0 and 1, another tenant's)": {
			profile:      "gb200-nvl72",
			hostChannels: 2,
			domain: func(c string) *apiv1beta1.ComputeDomain {
				return domain("a", "team-a", uidA, c, ptr.To[int32](4), testNode)
			},
			claim: channelClaim("w", "team-a", "claim-1", 3, uidA, apiv1beta1.AllocationModeAll),
			want: want{
				view:      cdi.ContainerView{DeviceNodes: []string{"/dev/nvidia-caps-imex-channels/channel4"}},
				claimSate: checkpoint.PrepareCompleted,
			},
		},
		"a claim in another namespace than its domain finds no domain there and gets no channel": {
			profile: "gb200-nvl72",
			domain: func(c string) *apiv1beta1.ComputeDomain {
				return domain("a", "team-a", uidA, c, ptr.To[int32](7), testNode)
			},
			claim: channelClaim("w", "team-b", "claim-1", 0, uidA, ""),
			want:  want{err: ErrWaitingForDomain, errText: "a ComputeDomain with UID " + string(uidA) + " in namespace team-b: there is none"},
		},
		"a node without a multi-node fabric succeeds with nothing injected": {
			profile: "hgx-h100-8",
			domain:  func(c string) *apiv1beta1.ComputeDomain { return domain("a", "team-a", uidA, c, nil) },
			claim:   channelClaim("w", "team-a", "claim-1", 0, uidA, ""),
			want:    want{claimSate: checkpoint.PrepareCompleted},
		},
		"a domain whose daemon is not ready here yet is a retryable wait": {
			profile: "gb200-nvl72",
			domain: func(c string) *apiv1beta1.ComputeDomain {
				return domain("a", "team-a", uidA, c, ptr.To[int32](7), "other-node")
			},
			claim: channelClaim("w", "team-a", "claim-1", 0, uidA, ""),
			want:  want{err: ErrWaitingForDomain, errText: "its status does not list node node-1", claimSate: checkpoint.PrepareStarted},
		},
		"a ready node whose clique has no channel yet waits too": {
			profile: "gb200-nvl72",
			domain:  func(c string) *apiv1beta1.ComputeDomain { return domain("a", "team-a", uidA, c, nil, testNode) },
			claim:   channelClaim("w", "team-a", "claim-1", 0, uidA, ""),
			want:    want{err: ErrWaitingForDomain, claimSate: checkpoint.PrepareStarted},
		},
		"a domain the API does not know (yet) is a retryable wait": {
			profile: "gb200-nvl72",
			claim:   channelClaim("w", "team-a", "claim-1", 0, uidA, ""),
			want:    want{err: ErrWaitingForDomain, errText: "a ComputeDomain with UID " + string(uidA) + " in namespace team-a: there is none"},
		},
		"an unknown field in the channel config is refused": {
			profile: "gb200-nvl72",
			domain: func(c string) *apiv1beta1.ComputeDomain {
				return domain("a", "team-a", uidA, c, ptr.To[int32](7), testNode)
			},
			claim: cdtest.MakeResourceClaim("w", "team-a").UID("claim-1").Device("channel", DefaultDriverName, testNode, "channel-0").Config(resourceapi.AllocationConfigSourceClaim, DefaultDriverName, map[string]any{
				"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomainChannelConfig", "domainID": string(uidA), "channel": 3,
			}).Obj(),
			want: want{err: ErrRefused, errText: `unknown field "channel"`},
		},
		"a daemon config on a channel slot is refused": {
			profile: "gb200-nvl72",
			domain: func(c string) *apiv1beta1.ComputeDomain {
				return domain("a", "team-a", uidA, c, ptr.To[int32](7), testNode)
			},
			claim: cdtest.MakeResourceClaim("w", "team-a").UID("claim-1").Device("channel", DefaultDriverName, testNode, "channel-0").Config(resourceapi.AllocationConfigSourceClaim, DefaultDriverName, map[string]any{"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomainDaemonConfig", "domainID": string(uidA)}).Obj(),
			want:  want{err: ErrRefused, errText: "a ComputeDomainDaemonConfig cannot configure a channel device; use a ComputeDomainChannelConfig"},
		},
		"a channel claim without config is refused": {
			profile: "gb200-nvl72",
			claim:   cdtest.MakeResourceClaim("w", "team-a").UID("claim-1").Device("channel", DefaultDriverName, testNode, "channel-0").Obj(),
			want:    want{err: ErrRefused, errText: "a channel device needs an opaque ComputeDomainChannelConfig"},
		},
		"a slot this node does not publish is refused": {
			profile: "gb200-nvl72",
			claim:   channelClaim("w", "team-a", "claim-1", 99, uidA, ""),
			want:    want{err: ErrRefused, errText: `device "channel-99" is not published by this node (slots channel-0..channel-31)`},
		},
		"a daemon claim from a tenant's namespace is refused: it would get another domain's identity and IMEX config": {
			profile: "gb200-nvl72",
			domain:  func(c string) *apiv1beta1.ComputeDomain { return domain("a", "team-a", uidA, c, nil) },
			claim:   daemonClaim("d", "team-b", "claim-1", 0, uidA),
			want:    want{err: ErrRefused, errText: `comes only from the operator's IMEX daemon pods in namespace "nvidia-dra"`},
		},
		"a daemon claim gets the domain's identity, clique and config directory": {
			profile: "gb200-nvl72",
			domain:  func(c string) *apiv1beta1.ComputeDomain { return domain("a", "team-a", uidA, c, nil) },
			claim:   daemonClaim("d", "nvidia-dra", "claim-1", 0, uidA),
			want: want{
				view: cdi.ContainerView{
					Env: []string{"COMPUTE_DOMAIN_CLIQUE_ID=<clique>", "COMPUTE_DOMAIN_CONFIG_DIR=/etc/nvidia-imex", "COMPUTE_DOMAIN_NAME=a",
						"COMPUTE_DOMAIN_NAMESPACE=team-a", "COMPUTE_DOMAIN_UUID=" + string(uidA)},
					Mounts: []string{"/etc/nvidia-imex"},
				},
				claimSate: checkpoint.PrepareCompleted,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newNodeEnv(t, tc.profile)
			for n := range tc.hostChannels {
				if _, err := hostroot.New(e.hostRoot).CreateImexChannel(n); err != nil {
					t.Fatal(err)
				}
			}
			if tc.domain != nil {
				e.domains.set(tc.domain(e.clique))
			}
			d := e.driver()
			res := prepare(t, d, tc.claim)
			if tc.want.err == nil && res.Err != nil {
				t.Fatalf("prepare failed: %v", res.Err)
			}
			if tc.want.err != nil {
				if !errors.Is(res.Err, tc.want.err) || !strings.Contains(res.Err.Error(), tc.want.errText) {
					t.Fatalf("prepare error = %v, want %v containing %q", res.Err, tc.want.err, tc.want.errText)
				}
			}
			wantView := tc.want.view
			for i, v := range wantView.Env {
				wantView.Env[i] = strings.ReplaceAll(v, "<clique>", e.clique)
			}
			if diff := cmp.Diff(wantView, view(t, e, res)); diff != "" {
				t.Errorf("container view (-want +got):\n%s", diff)
			}
			if got := d.state.ledger.Claims()[string(tc.claim.UID)].Status; got != tc.want.claimSate {
				t.Errorf("checkpointed claim status = %q, want %q", got, tc.want.claimSate)
			}
		})
	}
}

func TestAChannelIsACharacterDeviceWithTheIMEXMajor(t *testing.T) {
	e := newNodeEnv(t, "gb200-nvl72")
	e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](5), testNode))
	d := e.driver()
	if res := prepare(t, d, channelClaim("w", "team-a", "claim-1", 0, uidA, "")); res.Err != nil {
		t.Fatal(res.Err)
	}
	raw, err := os.ReadFile(d.state.cdi.SpecPath("claim-1"))
	if err != nil {
		t.Fatal(err)
	}
	var spec cdispec.Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	want := []*cdispec.DeviceNode{{Path: "/dev/nvidia-caps-imex-channels/channel5", Type: "c", Major: imexMajor, Minor: 5}}
	if diff := cmp.Diff(want, spec.Devices[0].ContainerEdits.DeviceNodes); diff != "" {
		t.Errorf("device nodes (-want +got):\n%s", diff)
	}
	// The channel's host entry exists (created when missing).
	if _, err := os.Stat(filepath.Join(e.hostRoot, "dev/nvidia-caps-imex-channels/channel5")); err != nil {
		t.Errorf("host channel entry: %v", err)
	}
}

// TestAChannelStillHeldByAnotherDomainIsRefused: should a new domain get the number of a channel that a claim
// of another (deleted) domain still holds on this node, the node refuses, retryably, until that claim is
// unprepared; then the new domain's pod gets it.
func TestAChannelStillHeldByAnotherDomainIsRefused(t *testing.T) {
	e := newNodeEnv(t, "gb200-nvl72")
	e.domains.set(domain("old", "team-a", uidA, e.clique, ptr.To[int32](3), testNode))
	d := e.driver()
	old := channelClaim("wa", "team-a", "claim-a", 0, uidA, "")
	if res := prepare(t, d, old); res.Err != nil {
		t.Fatal(res.Err)
	}
	e.domains.remove(uidA)
	e.domains.set(domain("new", "team-b", uidB, e.clique, ptr.To[int32](3), testNode))
	reused := channelClaim("wb", "team-b", "claim-b", 1, uidB, "")
	res := prepare(t, d, reused)
	if !errors.Is(res.Err, ErrWaitingForDomain) || !strings.Contains(res.Err.Error(), "channel 3 of ComputeDomain team-b/new on this node: it is still prepared for claim claim-a") {
		t.Fatalf("prepare of the new domain's claim while channel 3 is held: %v; want a retryable refusal naming the holder", res.Err)
	}
	if err := unprepare(t, d, old); err != nil {
		t.Fatal(err)
	}
	if res := prepare(t, d, reused); res.Err != nil {
		t.Errorf("once the old claim is unprepared: %v", res.Err)
	}
}

// Two domains in one clique, with pods on the same node: each pod sees only
// its own domain's channel, even when the scheduler gave A's claim the slot
// whose number is B's channel.
func TestTwoDomainsOnOneNodeAreIsolated(t *testing.T) {
	e := newNodeEnv(t, "gb200-nvl72")
	e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](3), testNode))
	e.domains.set(domain("b", "team-b", uidB, e.clique, ptr.To[int32](5), testNode))
	d := e.driver()
	resA := prepare(t, d, channelClaim("wa", "team-a", "claim-a", 5, uidA, ""))
	resB := prepare(t, d, channelClaim("wb", "team-b", "claim-b", 3, uidB, ""))
	if resA.Err != nil || resB.Err != nil {
		t.Fatalf("prepare: %v, %v", resA.Err, resB.Err)
	}
	if diff := cmp.Diff([]string{"/dev/nvidia-caps-imex-channels/channel3"}, view(t, e, resA).DeviceNodes); diff != "" {
		t.Errorf("domain A's pod (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/dev/nvidia-caps-imex-channels/channel5"}, view(t, e, resB).DeviceNodes); diff != "" {
		t.Errorf("domain B's pod (-want +got):\n%s", diff)
	}
	// A team-b claim naming domain A gets nothing: domains are looked up in the claim's namespace, so B's pods
	// cannot get A's channel (the claim waits for a domain of that UID in team-b, which never comes).
	if res := prepare(t, d, channelClaim("steal", "team-b", "claim-c", 7, uidA, "")); !errors.Is(res.Err, ErrWaitingForDomain) || len(res.Devices) != 0 {
		t.Errorf("cross-namespace claim: err = %v, devices %v; want ErrWaitingForDomain and none", res.Err, res.Devices)
	}
}

func TestPrepareIsIdempotentAndWaitsRetryably(t *testing.T) {
	e := newNodeEnv(t, "gb200-nvl72")
	cd := domain("a", "team-a", uidA, e.clique, ptr.To[int32](4))
	e.domains.set(cd)
	d := e.driver()
	claim := channelClaim("w", "team-a", "claim-1", 0, uidA, "")
	for range 3 {
		if res := prepare(t, d, claim); !errors.Is(res.Err, ErrWaitingForDomain) {
			t.Fatalf("before the daemon is ready: err = %v, want ErrWaitingForDomain", res.Err)
		}
	}
	// The controller lists the node Ready.
	e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](4), testNode))
	first := prepare(t, d, claim)
	if first.Err != nil {
		t.Fatal(first.Err)
	}
	// The domain changes later (even goes away): a repeated call returns the
	// stored result.
	e.domains.remove(uidA)
	again := prepare(t, d, claim)
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("repeated prepare (-first +again):\n%s", diff)
	}
}

// TestAWaitingClaimDoesNotHoldUpOthers: a channel claim waiting for its domain waits without the state's lock,
// so a daemon claim of another domain on the node is prepared meanwhile, and the waiting claim is prepared as
// soon as its domain becomes ready on the node.
func TestAWaitingClaimDoesNotHoldUpOthers(t *testing.T) {
	const readyWait = 5 * time.Second
	e := newNodeEnv(t, "gb200-nvl72")
	e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](4)))
	e.domains.set(domain("b", "team-b", uidB, e.clique, nil))
	d := e.driverWaiting(readyWait)

	waiting := make(chan kubeletplugin.PrepareResult, 1)
	start := time.Now()
	go func() { waiting <- prepare(t, d, channelClaim("w", "team-a", "claim-1", 0, uidA, "")) }()
	time.Sleep(200 * time.Millisecond) // the channel claim is waiting now

	if res := prepare(t, d, daemonClaim("daemon-b", "nvidia-dra", "claim-2", 0, uidB)); res.Err != nil {
		t.Fatalf("daemon claim of domain b: %v", res.Err)
	}
	if took := time.Since(start); took > readyWait/2 {
		t.Errorf("the daemon claim was prepared after %s: it waited for the channel claim's wait (%s)", took, readyWait)
	}
	select {
	case res := <-waiting:
		t.Fatalf("the channel claim returned before its domain was ready: %v", res.Err)
	default:
	}

	e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](4), testNode))
	select {
	case res := <-waiting:
		if res.Err != nil {
			t.Errorf("the channel claim, once its domain is ready: %v", res.Err)
		}
	case <-time.After(readyWait):
		t.Errorf("the channel claim was not prepared when its domain became ready")
	}
}

func TestTheSameSlotForTwoClaimsIsRefused(t *testing.T) {
	e := newNodeEnv(t, "gb200-nvl72")
	e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](4), testNode))
	d := e.driver()
	if res := prepare(t, d, channelClaim("w1", "team-a", "claim-1", 0, uidA, "")); res.Err != nil {
		t.Fatal(res.Err)
	}
	res := prepare(t, d, channelClaim("w2", "team-a", "claim-2", 0, uidA, ""))
	if !errors.Is(res.Err, ErrRefused) || !strings.Contains(res.Err.Error(), "already prepared for claim claim-1") {
		t.Errorf("err = %v, want the slot refused", res.Err)
	}
}

func TestResourcesPublishSlotsWithClique(t *testing.T) {
	res := BuildResources(testNode, DefaultDriverName, "cluster.3", 2, 1)
	var got []string
	for _, dev := range res.Pools[testNode].Slices[0].Devices {
		got = append(got, dev.Name+" "+*dev.Attributes["type"].StringValue+" "+*dev.Attributes["cliqueID"].StringValue)
		if *dev.Attributes["id"].IntValue != int64(len(got)-1)%2 && dev.Name != "daemon-0" {
			t.Errorf("%s: id %d", dev.Name, *dev.Attributes["id"].IntValue)
		}
	}
	want := []string{"channel-0 channel cluster.3", "channel-1 channel cluster.3", "daemon-0 daemon cluster.3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
}
