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

package nodeagent

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func mustPodAddresses(t *testing.T, nodeIP string) *podAddresses {
	t.Helper()
	p, err := newPodAddresses(nodeIP)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func addressPod(uid string, hostNetwork bool) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "ns", UID: types.UID(uid)},
		Spec:       corev1.PodSpec{HostNetwork: hostNetwork},
	}
}

// step is one call on the allocator: assign a pod or release one.
type step struct {
	assign  *corev1.Pod
	release types.UID
}

func TestPodAddresses(t *testing.T) {
	cases := map[string]struct {
		nodeIP string
		steps  []step
		want   []string // the address of each assign step
		inUse  int
	}{
		"pods on one node get distinct addresses outside the node IPs, hostIP stays the node's": {
			nodeIP: "127.0.1.2",
			steps:  []step{{assign: addressPod("a", false)}, {assign: addressPod("b", false)}},
			want:   []string{"127.1.2.1", "127.1.2.2"},
			inUse:  2,
		},
		"a pod asking again keeps its address": {
			nodeIP: "127.0.1.2",
			steps:  []step{{assign: addressPod("a", false)}, {assign: addressPod("a", false)}},
			want:   []string{"127.1.2.1", "127.1.2.1"},
			inUse:  1,
		},
		"a released address goes to the next pod": {
			nodeIP: "127.0.3.250",
			steps: []step{
				{assign: addressPod("a", false)}, {assign: addressPod("b", false)},
				{release: "a"}, {assign: addressPod("c", false)},
			},
			want:  []string{"127.3.250.1", "127.3.250.2", "127.3.250.1"},
			inUse: 2,
		},
		"hostNetwork pods share the node IP and hold no address": {
			nodeIP: "127.0.1.2",
			steps:  []step{{assign: addressPod("h", true)}, {assign: addressPod("a", false)}},
			want:   []string{"127.0.1.2", "127.1.2.1"},
			inUse:  1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := mustPodAddresses(t, tc.nodeIP)
			var got []string
			for _, s := range tc.steps {
				if s.assign == nil {
					p.release(s.release)
					continue
				}
				ip, err := p.assign(s.assign)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ip)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("addresses mismatch (-want +got):\n%s", diff)
			}
			if n := p.inUseCount(); n != tc.inUse {
				t.Errorf("in use = %d, want %d", n, tc.inUse)
			}
		})
	}
}

func TestPodAddressesOfTwoNodesNeverMeet(t *testing.T) {
	seen := map[string]string{}
	for _, nodeIP := range []string{"127.0.1.1", "127.0.1.2", "127.0.2.1"} {
		seen[nodeIP] = "node " + nodeIP
	}
	for _, nodeIP := range []string{"127.0.1.1", "127.0.1.2", "127.0.2.1"} {
		p := mustPodAddresses(t, nodeIP)
		for i := range 254 {
			ip, err := p.assign(addressPod(nodeIP+"-"+string(rune('a'+i%26))+string(rune('a'+i/26)), false))
			if err != nil {
				t.Fatal(err)
			}
			if owner, dup := seen[ip]; dup {
				t.Fatalf("pod address %s of node %s is already taken by %s", ip, nodeIP, owner)
			}
			seen[ip] = "a pod of " + nodeIP
		}
		if _, err := p.assign(addressPod(nodeIP+"-full", false)); err == nil {
			t.Errorf("node %s: the 255th pod got an address, want an error naming the range", nodeIP)
		}
	}
}

func TestPodAddressesRefuseNodeIPsOutsideTheSimulatorRange(t *testing.T) {
	for name, ip := range map[string]string{
		"not an address":       "node-1",
		"IPv6":                 "::1",
		"outside 127.0/16":     "10.0.1.2",
		"third octet zero":     "127.0.0.5",
		"last octet broadcast": "127.0.1.255",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := newPodAddresses(ip); err == nil {
				t.Errorf("newPodAddresses(%q) succeeded, want an error", ip)
			}
		})
	}
}
