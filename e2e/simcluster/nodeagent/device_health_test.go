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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// TestDeviceHealthReachesTheContainerStatus: a device the plugin reports
// unhealthy shows in containerStatuses[].allocatedResourcesStatus of the pod
// using it, as the kubelet writes it from the DRA manager's updates.
func TestDeviceHealthReachesTheContainerStatus(t *testing.T) {
	plugin := &scriptedPlugin{health: make(chan kubeletplugin.DeviceHealthReport, 1)}
	n := startTestNode(t, plugin, nil)
	n.createPodWithClaim("p", corev1.RestartPolicyAlways)
	n.eventually("the pod runs", 10*time.Second, func() bool { return n.phase("p") == corev1.PodRunning })

	plugin.health <- kubeletplugin.DeviceHealthReport{Devices: []kubeletplugin.DeviceHealth{{
		PoolName: testNodeName, DeviceName: "dev-p", Health: kubeletplugin.HealthStatusUnhealthy, LastUpdated: time.Now(), HealthCheckTimeout: time.Minute,
	}}}
	n.eventually("the container status names the unhealthy device", 10*time.Second, func() bool {
		p := n.pod("p")
		if p == nil || len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		for _, rs := range p.Status.ContainerStatuses[0].AllocatedResourcesStatus {
			for _, r := range rs.Resources {
				if r.Health == corev1.ResourceHealthStatusUnhealthy {
					return true
				}
			}
		}
		return false
	})
}

// TestARunningPodsStatusSettles: once a pod runs, its syncs (here: pod
// updates that change nothing the agent owns) do not write its status again:
// the device health the agent compares is what the API returns.
func TestARunningPodsStatusSettles(t *testing.T) {
	plugin := &scriptedPlugin{health: make(chan kubeletplugin.DeviceHealthReport, 1)}
	n := startTestNode(t, plugin, nil)
	n.createPodWithClaim("p", corev1.RestartPolicyAlways)
	n.eventually("the pod runs", 10*time.Second, func() bool { return n.phase("p") == corev1.PodRunning })
	time.Sleep(500 * time.Millisecond)
	statusWrites := func() int {
		c := 0
		for _, a := range n.client.Actions() {
			if a.GetVerb() == "update" && a.GetResource().Resource == "pods" && a.GetSubresource() == "status" {
				c++
			}
		}
		return c
	}
	before := statusWrites()
	for i := range 5 {
		pod := n.pod("p")
		pod.Labels = map[string]string{"touch": fmt.Sprint(i)}
		if _, err := n.client.CoreV1().Pods("ns").Update(n.ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if got := statusWrites() - before; got != 0 {
		t.Errorf("%d status writes of a running pod whose status did not change, want 0", got)
	}
}
