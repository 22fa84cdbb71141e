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

// Package imexclique is the controller of the IMEX ensembles: it keeps one IMEXClique per NVLink clique,
// listing every node of the clique whose long-lived IMEX daemon it trusts, each with an index that stays
// stable while the node stays. The clique's daemons render their IMEX nodes file from it; the ComputeDomain
// controller reads it to publish a domain's nodes. It is the only writer of IMEXCliques.
package imexclique
