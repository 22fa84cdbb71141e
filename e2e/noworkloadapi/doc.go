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

// Package noworkloadapi is the end-to-end story of a cluster without the Kubernetes 1.37 Workload API (the
// gates GenericWorkload, DRAWorkloadResourceClaims and TopologyAwareWorkloadScheduling off, as they are by
// default): ComputeDomains still form, their pods are placed by their own affinity, and each domain says that
// its placement is not guaranteed. A test binary of its own: one simulated cluster runs per process.
package noworkloadapi
