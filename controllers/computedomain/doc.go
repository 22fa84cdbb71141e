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

// Package computedomain reconciles ComputeDomains: it creates the domain's workload claim template, finds
// the nodes its workload claims are allocated on, reads what the long-lived IMEX daemons report of those
// nodes (IMEXNodes) and where their cliques' ensembles list them (IMEXCliques, written by package imexclique,
// which NewManager runs beside it), allocates one IMEX channel per domain and clique, keeps the domain's gang
// PodGroup when the cluster serves the Workload API (podgroup.go, through internal/workloadapi) or reports the
// verdict of the clique placement fallback when it does not (package cliqueplacement, which NewManager runs
// beside it), writes the status package's status once per
// pass, and releases the channels through the domain's finalizer. The design is docs/design/computedomains.md.
package computedomain
