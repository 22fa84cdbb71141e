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

// Package testdriver is a small DRA kubelet plugin for the simulated cluster,
// built on k8s.io/dynamic-resource-allocation/kubeletplugin: it publishes a
// node's devices in one ResourceSlice pool, writes one CDI spec per prepared
// claim, keeps the prepared claims in a checkpoint file, and removes both on
// unprepare. It speaks the same public names as the GPU plugin (driver
// gpu.nvidia.com, device types gpu/mig, uuid/parentUUID attributes) so the
// demo manifests work with either.
package testdriver
