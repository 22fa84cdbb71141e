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

// Package status computes a ComputeDomain's status from what the controller observed: the nodes its
// workload claims are allocated on, what the long-lived IMEX daemons report of those nodes (IMEXNodes) and
// where their cliques' ensembles list them (IMEXCliques), the channel the domain holds per clique, and the
// placement phase's finding. The result is stable per-clique node indices (the ensembles' own, at most 18 per
// NVL72 clique), one clique entry with its IMEX channel per NVLink clique, and the Ready, DaemonsReady,
// Degraded and PlacementGuaranteed conditions (types and reasons are constants in api/v1beta1). It is pure:
// the reconciler feeds it the facts and the time, and writes the result once.
package status
