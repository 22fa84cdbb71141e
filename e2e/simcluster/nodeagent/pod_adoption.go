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
	"context"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// adopt takes over, on the agent's first sync of a pod, a pod that an
// earlier agent of this node started, as a restarted kubelet finds its
// sandbox running: the DRA manager reloaded its claims from the checkpoint,
// so they are not prepared again, and the pod's status (start times,
// address) stays as it is. A pod with containers of a Runtime image is not
// adopted (their goroutines belonged to the earlier agent): it is started
// again. It reports whether the pod was adopted.
func (a *Agent) adopt(ctx context.Context, st *podState) bool {
	pod := st.pod
	if pod.Status.Phase != corev1.PodRunning || len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	if a.cfg.Runtime != nil && slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return a.cfg.Runtime.Handles(c.Image) }) {
		return false
	}
	if len(pod.Spec.ResourceClaims) > 0 && !a.dra.PodMightNeedToUnprepareResources(pod.UID) {
		return false // the checkpoint does not know the pod's claims
	}
	var startedAt metav1.Time
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil || cs.ContainerID != containerID(pod, cs.Name) {
			return false
		}
		if startedAt.IsZero() || cs.State.Running.StartedAt.Before(&startedAt) {
			startedAt = cs.State.Running.StartedAt
		}
	}
	if !pod.Spec.HostNetwork && !a.podIPs.reserve(pod.UID, pod.Status.PodIP) {
		return false
	}
	st.prepared = true
	st.startedAt = startedAt.Time
	klog.FromContext(ctx).V(2).Info("Adopted a running pod from the checkpoint", "startedAt", startedAt)
	return true
}

// reserve gives the pod the address it already has, if it is one of this
// node's and free.
func (p *podAddresses) reserve(uid types.UID, ip string) bool {
	addr, err := netip.ParseAddr(ip)
	if err != nil || !addr.Is4() {
		return false
	}
	b := addr.As4()
	if [3]byte{b[0], b[1], b[2]} != p.prefix || b[3] == 0 || b[3] == 255 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if last, ok := p.byPod[uid]; ok {
		return last == b[3]
	}
	if p.inUse[b[3]] {
		return false
	}
	p.inUse[b[3]], p.byPod[uid] = true, b[3]
	return true
}
