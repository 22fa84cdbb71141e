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
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
)

// memoryBacklog is how many dialed connections a memory listener holds before
// it accepts them, as the kernel's accept queue does (net.core.somaxconn).
const memoryBacklog = 4096

// MemoryNetwork is a [Network] inside one process: what the host's loopback
// network is to stand-ins in processes of their own, for stand-ins that run
// as goroutines of one simulator. A link is a [net.Pipe]: no file
// descriptor, the same bytes in the same order. It behaves as TCP does where
// the stand-ins can tell: a dial to an address nobody listens on is refused
// (ECONNREFUSED), listening on a taken address fails (EADDRINUSE), closing
// one end of a link (a daemon that stops or is killed closes all of its) makes
// the other end's reads return io.EOF at once, and closing a listener closes
// the connections it has not accepted yet, whose dialers then read io.EOF.
// Deadlines work as on a socket. One difference: a write blocks until the
// other end reads it (no socket buffer); the stand-in protocol writes only
// what its peer is about to read, under a deadline.
//
// The zero value is not usable: use [NewMemoryNetwork].
type MemoryNetwork struct {
	mu        sync.Mutex
	listeners map[netip.AddrPort]*memoryListener
	nextPort  uint16
}

// NewMemoryNetwork returns an empty in-process network.
func NewMemoryNetwork() *MemoryNetwork {
	return &MemoryNetwork{listeners: map[netip.AddrPort]*memoryListener{}, nextPort: 32768}
}

// Listen implements Network. The address must name an IP and a port (no
// wildcard, no port 0): stand-ins bind to their node's address and their
// fixed ports.
func (n *MemoryNetwork) Listen(_ context.Context, address string) (net.Listener, error) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || ap.Port() == 0 || ap.Addr().IsUnspecified() {
		return nil, &net.OpError{Op: "listen", Net: "memory", Err: fmt.Errorf("address %q: want <IP>:<port>, port not 0, IP not a wildcard", address)}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, taken := n.listeners[ap]; taken {
		return nil, &net.OpError{Op: "listen", Net: "memory", Addr: net.TCPAddrFromAddrPort(ap), Err: syscall.EADDRINUSE}
	}
	l := &memoryListener{network: n, addr: ap, backlog: make(chan net.Conn, memoryBacklog), closed: make(chan struct{})}
	n.listeners[ap] = l
	return l, nil
}

// Dial implements Network.
func (n *MemoryNetwork) Dial(ctx context.Context, localIP, address string) (net.Conn, error) {
	remote, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "memory", Err: fmt.Errorf("address %q: %w", address, err)}
	}
	n.mu.Lock()
	l := n.listeners[remote]
	port := n.nextPort
	if n.nextPort++; n.nextPort == 0 {
		n.nextPort = 32768
	}
	n.mu.Unlock()
	local := &net.TCPAddr{Port: int(port)}
	if localIP != "" {
		local.IP = net.ParseIP(localIP)
	}
	refused := &net.OpError{Op: "dial", Net: "memory", Source: local, Addr: net.TCPAddrFromAddrPort(remote), Err: syscall.ECONNREFUSED}
	if l == nil {
		return nil, refused
	}
	client, server := net.Pipe()
	clientEnd := &memoryConn{Conn: client, local: local, remote: net.TCPAddrFromAddrPort(remote)}
	serverEnd := &memoryConn{Conn: server, local: net.TCPAddrFromAddrPort(remote), remote: local}
	select {
	case <-l.closed:
		_ = client.Close()
		return nil, refused
	default:
	}
	select {
	case l.backlog <- serverEnd:
		// A Close that raced with the send has drained the backlog before the
		// send, or drains it now: a connection must never sit in the backlog
		// of a closed listener, its dialer believing in a live link.
		select {
		case <-l.closed:
			l.drain()
		default:
		}
		return clientEnd, nil
	case <-l.closed:
		_ = client.Close()
		return nil, refused
	case <-ctx.Done():
		_ = client.Close()
		return nil, &net.OpError{Op: "dial", Net: "memory", Source: local, Addr: net.TCPAddrFromAddrPort(remote), Err: ctx.Err()}
	}
}

type memoryListener struct {
	network *MemoryNetwork
	addr    netip.AddrPort
	backlog chan net.Conn
	closed  chan struct{}
	once    sync.Once
}

func (l *memoryListener) Accept() (net.Conn, error) {
	select {
	case <-l.closed:
		return nil, &net.OpError{Op: "accept", Net: "memory", Addr: l.Addr(), Err: net.ErrClosed}
	default:
	}
	select {
	case c := <-l.backlog:
		return c, nil
	case <-l.closed:
		return nil, &net.OpError{Op: "accept", Net: "memory", Addr: l.Addr(), Err: net.ErrClosed}
	}
}

// Close stops listening: the address is free again, and the connections
// dialed but not accepted are closed, as the kernel resets them.
func (l *memoryListener) Close() error {
	l.once.Do(func() {
		l.network.mu.Lock()
		delete(l.network.listeners, l.addr)
		l.network.mu.Unlock()
		close(l.closed)
		l.drain()
	})
	return nil
}

func (l *memoryListener) drain() {
	for {
		select {
		case c := <-l.backlog:
			_ = c.Close()
		default:
			return
		}
	}
}

func (l *memoryListener) Addr() net.Addr { return net.TCPAddrFromAddrPort(l.addr) }

// memoryConn is one end of a link, with the addresses a TCP connection
// would have.
type memoryConn struct {
	net.Conn
	local, remote net.Addr
}

func (c *memoryConn) LocalAddr() net.Addr  { return c.local }
func (c *memoryConn) RemoteAddr() net.Addr { return c.remote }
