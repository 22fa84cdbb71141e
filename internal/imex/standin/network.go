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
)

// Network is where a stand-in listens (peer and command ports) and what it
// dials (its peers, a query of the command port). The stand-in binary uses
// [TCP]; stand-ins that share one process (a simulated cluster) use a
// [MemoryNetwork], which speaks the same protocol without a file descriptor
// per link.
type Network interface {
	// Listen listens on address (host:port).
	Listen(ctx context.Context, address string) (net.Listener, error)
	// Dial connects to address from localIP ("" for any); ctx bounds the dial.
	Dial(ctx context.Context, localIP, address string) (net.Conn, error)
}

// TCP is the host's network: real TCP sockets.
var TCP Network = tcpNetwork{}

type tcpNetwork struct{}

func (tcpNetwork) Listen(ctx context.Context, address string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", address)
}

func (tcpNetwork) Dial(ctx context.Context, localIP, address string) (net.Conn, error) {
	var d net.Dialer
	if localIP != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(localIP)}
	}
	return d.DialContext(ctx, "tcp", address)
}

// orTCP is network, or TCP when it is nil.
func orTCP(network Network) Network {
	if network == nil {
		return TCP
	}
	return network
}
