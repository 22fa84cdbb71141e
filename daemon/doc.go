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

// Package daemon is the compute-domain daemon: one node's long-lived IMEX
// daemon, serving every ComputeDomain on the node's NVLink clique. It reads its
// clique from its Node's label, renders the nvidia-imex config and the nodes
// file from its clique's IMEXClique (the ensemble the controller keeps),
// supervises the IMEX process (restarts it when it exits, makes it re-read the
// nodes file when the peers change), probes its readiness and reports it in
// its node's IMEXNode. Domains are isolated by their channels, not by daemons.
//
// What it relies on of nvidia-imex is package imex's contract. The daemon runs
// the real programs (ExecStarter, CtlProber); the simulated cluster and the
// tests inject the stand-in (package imex/standin) through Options.Starter and
// Options.Prober instead.
package daemon
