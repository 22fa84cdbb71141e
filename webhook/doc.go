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

// Package webhook is the operator's optional admission webhook (off by default in the chart, as NVIDIA's is):
// it rejects ResourceClaims and ResourceClaimTemplates whose opaque device configs for our drivers would fail
// at prepare time, so that a typo is an error at `kubectl apply`, naming the field, instead of a pod stuck in
// ContainerCreating. With --pod-groups it also mutates pod creation: a pod that uses a ComputeDomain's workload
// claim template joins the domain's PodGroup (Kubernetes 1.37 Workload API), so unmodified NVIDIA-style
// manifests get gang placement inside one NVLink clique.
//
// File map:
//   - opaque_config.go: the validation of a claim spec's opaque configs (pure, table-tested).
//   - handlers.go: the admission handlers for ResourceClaims and ResourceClaimTemplates and their paths.
//   - podgroup.go: the mutating handler that sets a pod's spec.schedulingGroup.podGroupName.
package webhook
