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

package simcluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
)

// NodeObject is the Node a simulated node registers, with its capacity,
// labels and loopback address.
func NodeObject(spec topology.NodeSpec) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(spec.Profile.CPU),
		corev1.ResourceMemory:           resource.MustParse(spec.Profile.Memory),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
	labels := make(map[string]string, len(spec.Labels))
	for k, v := range spec.Labels {
		labels[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: labels},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: spec.IP},
				{Type: corev1.NodeHostName, Address: spec.Name},
			},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          "v1.37.2",
				OperatingSystem:         "linux",
				Architecture:            "amd64",
				ContainerRuntimeVersion: "simcluster://1",
			},
		},
	}
}
