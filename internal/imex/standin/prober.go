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

package standin

import (
	"context"
	"net"
	"strconv"

	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// CommandPortProber asks a stand-in on its command port directly, without a
// query process (for simulated nodes in one process).
type CommandPortProber struct {
	CmdAddress string
	// Network is the stand-in's network; nil is TCP.
	Network Network
}

// NewCommandPortProber returns a prober for the stand-in listening on
// ipAddress with the default command port, over TCP.
func NewCommandPortProber(ipAddress string) CommandPortProber {
	return CommandPortProber{CmdAddress: net.JoinHostPort(ipAddress, strconv.Itoa(imex.CommandPort))}
}

// Probe implements imex.Prober. No answer means not ready.
func (p CommandPortProber) Probe(ctx context.Context) (imex.State, error) {
	network := orTCP(p.Network)
	answer, err := QueryOn(ctx, network, p.CmdAddress)
	if err != nil || answer != imex.AnswerReady {
		return imex.State{}, nil
	}
	peers, err := QueryPeersOn(ctx, network, p.CmdAddress)
	if err != nil {
		return imex.State{}, nil
	}
	return imex.State{Ready: true, Peers: imex.PeerMap(peers)}, nil
}
