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

// Package processkill is the process-kill harness of the kubelet plugins: each plugin runs as its own
// process (its command, built with -tags crashtest, on mock NVML and a fake host root, against a real
// kube-apiserver), driven over its real gRPC socket by the kubelet's DRA manager as on a node, and is killed
// with SIGKILL at random: at its named crash points (CDO_CRASH_AT), by a timer between them, during its
// start-up reconcile and again while it recovers from the previous kill. Each kill is followed by a restart
// and the kubelet's answer; the node's files, the mock GPUs' state file and the usage ledger are then
// checked. A required crash point the random kills have not reached once PROCESS_KILLS are spent is then
// aimed at (CDO_CRASH_POINT: the armed incarnation also dies at that point's first hit). Unlike the
// in-process harnesses (kubeletplugin/*/crash_harness_test.go), nothing deferred runs,
// and no state survives in memory.
//
// PROCESS_KILLS sets the kills per plugin (default 200, as make test runs it); CRASH_SEED replays a run.
package processkill
