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

// Package computedomain reconciles ComputeDomains: it creates the workload and daemon claim templates
// and the per-domain IMEX daemon DaemonSet, assigns per-clique node indices and IMEX channels from the
// daemons' ComputeDomainMember records, keeps the domain's gang PodGroup when the cluster serves the Workload
// API (podgroup.go, through internal/workloadapi), aggregates the domain's status, and tears everything down
// through the domain's finalizer. The design is docs/design/computedomains.md.
package computedomain
