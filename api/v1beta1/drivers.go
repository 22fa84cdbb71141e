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

package v1beta1

// The DRA driver names, NVIDIA's (wire compatibility: DeviceClasses, CEL selectors and opaque configs name them).
// Both binaries take --driver-name to serve another name in an isolated test install.
const (
	// GPUDriverName serves GPUs and MIG devices.
	GPUDriverName = "gpu.nvidia.com"
	// ComputeDomainDriverName serves IMEX channels and the IMEX daemons' devices.
	ComputeDomainDriverName = "compute-domain.nvidia.com"
)

// NVL72CliqueSize is the number of compute trays in one GB200/GB300 NVL72 rack: the nodes of one NVLink
// clique, and so the most nodes one IMEX ensemble holds there.
const NVL72CliqueSize = 18
