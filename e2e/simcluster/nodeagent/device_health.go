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
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// watchDeviceHealth reads the DRA manager's device health updates, as the
// kubelet's sync loop does, and syncs the pods they name, so their
// containerStatuses[].allocatedResourcesStatus follow the devices (and the
// manager's update channel never fills up).
func (a *Agent) watchDeviceHealth(ctx context.Context) {
	updates := a.dra.Updates()
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-updates:
			for _, uid := range u.PodUIDs {
				if key := a.keyOfPod(types.UID(uid)); key != "" {
					a.queue.Add(key)
				}
			}
		}
	}
}

// withDeviceHealth sets status's allocatedResourcesStatus from the DRA
// manager (the kubelet's UpdateAllocatedResourcesStatus, in
// generateAPIPodStatus), each list sorted and an empty one nil (as the API
// returns it), so that equal health compares equal and a running pod's sync
// does not write its status again and again.
func (a *Agent) withDeviceHealth(ctx context.Context, pod *corev1.Pod, status *corev1.PodStatus) {
	a.dra.UpdateAllocatedResourcesStatus(klog.FromContext(ctx), pod, status)
	for i := range status.ContainerStatuses {
		for j := range status.ContainerStatuses[i].AllocatedResourcesStatus {
			rs := &status.ContainerStatuses[i].AllocatedResourcesStatus[j]
			if len(rs.Resources) == 0 {
				rs.Resources = nil
				continue
			}
			slices.SortFunc(rs.Resources, func(x, y corev1.ResourceHealth) int {
				return strings.Compare(string(x.ResourceID), string(y.ResourceID))
			})
		}
	}
}

// syncDeviceHealth writes the running pod's device health when it differs
// from what the pod reports.
func (a *Agent) syncDeviceHealth(ctx context.Context, st *podState) error {
	status := *st.pod.Status.DeepCopy()
	a.withDeviceHealth(ctx, st.pod, &status)
	if equality.Semantic.DeepEqual(status.ContainerStatuses, st.pod.Status.ContainerStatuses) {
		return nil
	}
	return a.updateStatus(ctx, st.pod, func(p *corev1.Pod) corev1.PodStatus {
		s := *p.Status.DeepCopy()
		a.withDeviceHealth(ctx, p, &s)
		return s
	})
}
