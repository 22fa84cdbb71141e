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

// Package mock is a profile-driven, in-memory implementation of the
// internal/nvml seam: one *Lib per simulated node, with no process-global
// state, safe for concurrent use.
//
// A profile (YAML, embedded defaults under profiles/, or a file) describes a
// node model: GPU count, product facts, NVLink fabric, and MIG profile tables
// with placements and static layouts. [New] builds a node from a profile and
// a node name; everything that identifies hardware (GPU and MIG UUIDs, the
// fabric cluster UUID) is derived deterministically from the node name, the
// cluster name and indices, so a restarted node looks the same.
//
// [ClusterSpec] lays out a simulated cluster (racks × nodes per rack) and
// returns one [Config] per node, so that every tray of a GB200 NVL72 rack
// reports its rack's clique.
//
// Failures are injected at run time through methods on [Lib] (InjectXid,
// SetGPULost, SetFabricState, SetFabricDegraded, SetCliqueID, ApplyFaults) or
// through a YAML fault file that [Lib.WatchFaultFile] polls; both are seen
// by consumers only through NVML calls and event sets, as with a real driver.
//
// MIG instances can be created and destroyed through the same calls as with
// the real driver (CreateGpuInstanceWithPlacement, CreateComputeInstance,
// Destroy); placements and instance counts of the profile are enforced.
package mock
