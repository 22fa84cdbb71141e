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

package simcluster

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
)

// apiProxy is the address the operator's pods reach the API server at (their KUBERNETES_SERVICE_HOST and
// PORT), a relay to its secure port, so that a test can take the API server away from our components, as
// a network partition or an API server outage would, while the control plane and the node agents keep it.
//
// The pods of the simulated nodes run in this process and reach it by DialContext: their end of a
// connection is a net.Pipe, and only the relay's link to the API server is a TCP connection, as a real
// pod's connection is (one per client transport). Through the listener each connection cost four sockets
// and two splice pipes of io.Copy; this way it costs the two of the TCP link (docs/benchmarks.md, "1,024
// nodes"). What the pod sees is the same: a cut closes its end (EOF), a dial while down is refused.
type apiProxy struct {
	listener net.Listener
	target   string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startAPIProxy(target string) (*apiProxy, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	p := &apiProxy{listener: l, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the proxy's address.
func (p *apiProxy) Addr() string { return p.listener.Addr().String() }

func (p *apiProxy) serve() {
	defer p.wg.Done()
	for {
		conn, err := p.listener.Accept()
		if err != nil {
			return
		}
		if !p.admit(conn) {
			_ = conn.Close() // refused, as a stopped API server answers
		}
	}
}

// admit relays conn unless the proxy is down.
func (p *apiProxy) admit(conn net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return false
	}
	p.conns[conn] = struct{}{}
	p.wg.Add(1)
	go p.relay(conn)
	return true
}

// DialContext connects an in-process client to the relay (network and address are the proxy's, whatever
// they say): ECONNREFUSED while down.
func (p *apiProxy) DialContext(_ context.Context, _, _ string) (net.Conn, error) {
	client, relayEnd := net.Pipe()
	if !p.admit(relayEnd) {
		_ = client.Close()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: p.listener.Addr(), Err: syscall.ECONNREFUSED}
	}
	return client, nil
}

func (p *apiProxy) relay(client net.Conn) {
	defer p.wg.Done()
	defer p.forget(client)
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.conns[server] = struct{}{}
	p.mu.Unlock()
	defer p.forget(server)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
}

func (p *apiProxy) forget(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// SetDown cuts every connection and refuses new ones (true), or serves again (false).
func (p *apiProxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

// Close stops the proxy and its connections.
func (p *apiProxy) Close() error {
	err := p.listener.Close()
	p.SetDown(true)
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
