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

// Package membership turns the ComputeDomainMember records of one domain into the domain's status: stable
// per-clique node indices (at most 18 nodes per NVL72 clique), one clique entry with its IMEX channel per
// NVLink clique, and the Ready, DaemonsReady and Degraded conditions. It is pure: the reconciler feeds it
// the records, the channels it allocated and the time, and writes the result once.
package membership
