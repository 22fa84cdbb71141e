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

// Package standin is a stand-in for NVIDIA's nvidia-imex daemon and its
// nvidia-imex-ctl query tool, for clusters without a multi-node NVLink fabric
// (the simulated cluster, tests, mock nodes). It is a test tool: none of the
// operator's components links it; cmd/imex-standin is its binary.
//
// It keeps nvidia-imex's contract as package imex states it: `-c <config
// file>` names a key=value config file (imex.Config: SERVER_BIND_IP,
// SERVER_PORT, IMEX_CMD_BIND_INTERFACE_IP, IMEX_CMD_PORT,
// IMEX_NODE_CONFIG_FILE), the nodes file lists one peer address per line, and
// SIGHUP makes the daemon re-read the nodes file without restarting.
//
// What it does is real networking, so peer loss is observable:
//   - it listens on SERVER_BIND_IP:SERVER_PORT (50000) for its peers and holds
//     one TCP connection with every other address of the nodes file on the
//     same port (the lower address dials, from its own address: each
//     simulated node has its own loopback address, 127.0.x.y); a peer is
//     "connected" once the handshake is done and stays so until either side
//     closes the connection (a killed peer's kernel closes its sockets, so the
//     loss is seen at once);
//   - it answers on IMEX_CMD_BIND_INTERFACE_IP:IMEX_CMD_PORT (50005) a
//     line protocol: "QUERY" → "READY" only while it listens for peers
//     ("NOT_READY" otherwise), "PEERS" → one "<address> CONNECTED|DISCONNECTED"
//     line per peer of the nodes file, then "END".
//
// The same binary is the query tool: `-q` prints READY or NOT_READY (what
// `nvidia-imex-ctl -q` prints) and `-N` prints the peer table, both reading the
// command address from the config file given with -c. [Run] is the whole
// command. A simulator runs many stand-ins in one process with [InProcess]:
// an imex.Starter that runs the daemon as a goroutine and an imex.Prober that
// asks its command port directly. [InProcessOn] runs them on a [Network] of
// the caller's: a [MemoryNetwork] gives the same protocol and the same
// behavior on loss (EOF at once, refused dials) without a file descriptor
// per link, which is what lets the simulator run a thousand nodes in one
// process; the binary always uses [TCP].
package standin
