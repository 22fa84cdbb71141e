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

// Package cliqueplacement is the clique placement fallback, for clusters without the Workload API: the
// webhook (the chart's webhook.podGroups) holds each pod of a ComputeDomain with spec.numNodes behind
// v1beta1.CliquePlacementGate; once all spec.numNodes pods exist, this controller picks one NVLink clique with
// that many free nodes from live capacity and releases every pod into it, together, with required node
// affinity on the clique label.
//
// It is its own controller, as Kueue's topology ungater is: it writes user pods, so it has its own cache of
// them (only the pods labeled v1beta1.PlacementDomainLabelKey, in every namespace), its own memory (the clique
// just picked for a domain, until its cache shows the release) and its own work queue. It writes nothing of
// the ComputeDomain: what it finds (the PlacementGuaranteed condition) goes into Verdicts, which the
// ComputeDomain controller reads for the domain's status and watches for changes, so that the status keeps
// one writer.
//
// Free capacity trusts only what a tenant cannot forge: a pod counts against its clique until it binds when
// its label names an existing domain of its namespace with spec.numNodes and it carries the clique annotation,
// which only the controller may write (the chart's placement-mark policy); a domain's unbound pods count for at
// most its spec.numNodes less its bound pods. A domain no clique has room for looks again after 2 s, doubling
// up to a minute. The label's value is the domain's name, or a hashed value for a name longer than a label
// value allows (v1beta1.PlacementDomainLabelValue).
//
// It is not a scheduler gang (a tray taken by another pod between the pick and the bind leaves a pod Pending
// until one frees), but it never splits a domain across cliques and never lets part of it start while the rest
// cannot fit. The pick is durable only on the released pods: a kill before the first release leaves every pod
// held, and the next reconcile picks again from live capacity; a kill between releases leaves the clique on the
// released pods' annotation, and the rest follow into it.
package cliqueplacement
