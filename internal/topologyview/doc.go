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

// Package topologyview builds a read-only picture of a cluster's NVLink topology from plain Kubernetes
// objects: one row per NVLink clique (rack), one cell per tray (node), with the ComputeDomain or pod that
// holds each tray's GPUs, and the trays that cannot take work (cordoned, tainted, an unhealthy GPU, the IMEX
// daemon not ready). It also describes one ComputeDomain: its cliques, slices, channels, nodes, pods,
// conditions, events and what blocks it. The kubectl plugin cmd/kubectl-computedomain prints the model as
// text, JSON, YAML or SVG.
//
// The model is built from a Snapshot (snapshot.go), which Fetch lists through the Kubernetes API alone, so
// the view works the same on the simulated cluster, kind and a real cluster.
package topologyview
