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

// Package sharing is the end-to-end story of consumable GPU shares (issue 25): NVIDIA's consumable-shares demos
// on a simulated H100 node whose GPU plugin runs with the ConsumableShares gate, in each of NVIDIA's modes
// (unlimited, an integer share count, memory), switched with `helm upgrade` as an operator would. The scheduler
// is the real kube-scheduler with consumable capacity (DRAConsumableCapacity, on in 1.37); the plugin prepares
// every share on the node. With consumable shares disabled, the MPS story: two pods share a GPU through one MPS
// claim, whose MPS control daemon (the stand-in nvidia-cuda-mps-control, a real process) runs on the node while
// the claim is prepared and is gone after. With PassthroughSupport and FabricManagerPartitioning on, NVIDIA's
// passthrough shapes (demo/passthrough): the VFIO quickstart and two GPUs of one Fabric Manager partition for a VM
// (matchAttribute gpu.nvidia.com/partition2), each checked on the node (the pod's CDI edits carry the /dev/vfio
// nodes, the fake sysfs shows the GPUs on vfio-pci, the mock Fabric Manager the partition active) and after the pod
// is gone (GPUs back on nvidia and published as GPUs, partition inactive). A test binary of its own: the mode is a setting of the plugin's
// DaemonSet, and one simulated cluster runs per process.
package sharing
