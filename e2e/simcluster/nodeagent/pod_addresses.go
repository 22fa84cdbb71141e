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
	"fmt"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podAddresses gives every pod of a node its own loopback address, so that
// two pods on one node (two domains' IMEX daemons, say) can listen on the
// same port. A node with the IP 127.0.A.B hands out 127.A.B.1 to
// 127.A.B.254: node IPs keep the second octet 0 and A is at least 1, so a
// pod address never equals a node IP, and two nodes' ranges never meet.
// Pods with hostNetwork share the node's IP, as on a real node.
type podAddresses struct {
	nodeIP string
	prefix [3]byte // 127.A.B

	mu    sync.Mutex
	byPod map[types.UID]byte
	inUse map[byte]bool
}

// newPodAddresses derives a node's pod range from its IP.
func newPodAddresses(nodeIP string) (*podAddresses, error) {
	addr, err := netip.ParseAddr(nodeIP)
	if err != nil || !addr.Is4() {
		return nil, fmt.Errorf("node IP %q: must be an IPv4 address 127.0.<1-255>.<1-255> to carve pod addresses from", nodeIP)
	}
	b := addr.As4()
	if b[0] != 127 || b[1] != 0 || b[2] == 0 || b[3] == 0 || b[3] == 255 {
		return nil, fmt.Errorf("node IP %q: must be 127.0.<1-255>.<1-254> to carve pod addresses from", nodeIP)
	}
	return &podAddresses{
		nodeIP: nodeIP,
		prefix: [3]byte{127, b[2], b[3]},
		byPod:  map[types.UID]byte{},
		inUse:  map[byte]bool{},
	}, nil
}

// assign returns the pod's address, choosing a free one the first time.
func (p *podAddresses) assign(pod *corev1.Pod) (string, error) {
	if pod.Spec.HostNetwork {
		return p.nodeIP, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if last, ok := p.byPod[pod.UID]; ok {
		return p.format(last), nil
	}
	for last := byte(1); last < 255; last++ {
		if !p.inUse[last] {
			p.inUse[last] = true
			p.byPod[pod.UID] = last
			return p.format(last), nil
		}
	}
	return "", fmt.Errorf("pod %s/%s: all 254 pod addresses %s of node %s are in use", pod.Namespace, pod.Name, p.format(0)+"/24", p.nodeIP)
}

// release frees the pod's address (no-op for pods without one).
func (p *podAddresses) release(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if last, ok := p.byPod[uid]; ok {
		delete(p.inUse, last)
		delete(p.byPod, uid)
	}
}

// inUseCount is how many pods hold an address.
func (p *podAddresses) inUseCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byPod)
}

func (p *podAddresses) format(last byte) string {
	return netip.AddrFrom4([4]byte{p.prefix[0], p.prefix[1], p.prefix[2], last}).String()
}
