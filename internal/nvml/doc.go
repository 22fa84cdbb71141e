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

// Package nvml is the seam between our components and the NVIDIA Management
// Library. Every part of the operator that reads or changes GPU state (the GPU
// kubelet plugin, the compute-domain kubelet plugin, the compute-domain daemon)
// talks to an [Interface] from this package, never to go-nvml directly, so that
// the same code runs against the real driver on a GPU node and against the
// profile-driven mock (package internal/nvml/mock) in unit tests, on kind and in
// the simulated cluster.
//
// # Two layers
//
// The low layer ([Interface], [Device], [GpuInstance], [ComputeInstance],
// [EventSet]) is the subset of go-nvml's nvml.Interface / nvml.Device that we
// use, with the same method names, argument order and return codes ([Return],
// [SUCCESS], [ERROR_GPU_IS_LOST], ...). The go-nvml value types that appear in
// it (PciInfo, GpuInstanceProfileInfo, ...) are re-exported as aliases, so a
// consumer imports only this package. [NewReal] adapts go-nvml to it; the mock
// implements it from a profile.
//
// The high layer turns that into facts a consumer can publish without
// re-deriving anything:
//
//   - [Discover] returns a [NodeInfo]: driver and CUDA driver versions, and one
//     [GPUInfo] per full GPU: its [GPUFacts] (UUID, minor, index, PCI bus ID,
//     NUMA node, memory, product name, brand, architecture, compute
//     capability, addressing mode, MIG mode), the MIG profiles the GPU
//     supports with their placements and engine counts, its existing MIG
//     devices with their MIG UUIDs and parent UUID, and its fabric info. [DiscoverWithOptions] with
//     SkipLostGPUs leaves GPUs that fell off the bus out (NodeInfo.LostGPUs)
//     instead of failing.
//   - [NodeInfo.CliqueID] / [CliqueID] / [NodeCliqueID] return the node's NVLink clique
//     "<clusterUUID>.<cliqueId>", "" on a node without multi-node NVLink, and
//     an error when GPUs disagree or the fabric is not ready.
//   - [MigProfileName] names a MIG profile the way nvidia-smi does
//     ("1g.5gb", "1g.5gb+me", "1c.3g.20gb").
//
// # Selecting real or mock
//
// Binaries never choose an implementation themselves: they build
// backend.Options with OptionsFromEnv, register them on their own
// pflag.FlagSet with Options.AddFlags, and call backend.Open (package
// internal/nvml/backend), which honors --nvml=real|mock, --nvml-mock-profile,
// --nvml-mock-profile-file, --nvml-mock-node-name, ... and the NVML_*
// environment variables (docs/mock-nvml.md lists them). Nothing here keeps process-global state: many simulated nodes may
// each hold their own Interface in one process.
//
// # Time slicing
//
// NVML has no call to set the compute time slice (nvidia-smi compute-policy
// does it through a private path), so [Device.SetTimeSlice] is our addition:
// the real implementation runs "nvidia-smi compute-policy", the mock records
// the value.
package nvml
