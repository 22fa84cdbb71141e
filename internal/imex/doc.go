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

// Package imex is the contract between the compute-domain daemon and NVIDIA's
// IMEX daemon, as far as the daemon depends on it; the stand-in (package
// standin) keeps the same contract where no multi-node NVLink fabric exists.
//
//   - Processes: the daemon runs `nvidia-imex -c <config>` (a [Starter]),
//     SIGHUP makes it re-read its nodes file without a restart, and
//     `nvidia-imex-ctl -q -c <config>` prints [AnswerReady] once it is ready
//     (a [Prober] asks it). The stand-in also prints its peer table with `-N`
//     ([ParsePeerTable]); nvidia-imex-ctl's node table is not read, so with the
//     real tool only READY is known.
//   - Ports: peers talk on [ServerPort] (50000), the command port is
//     [CommandPort] (50005).
//   - The config file: key=value lines, '#' comments. The daemon writes
//     nvidia-imex's documented keys, bound to the node's address; [Config] is
//     what is read back ([ParseConfig]): the bind addresses, the ports and
//     IMEX_NODE_CONFIG_FILE, the path of the nodes file.
//   - The nodes file: one peer address per line, the node's own included
//     ([ReadNodesFile]).
package imex
