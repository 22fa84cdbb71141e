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
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// Handshake lines on the peer port.
const (
	helloPrefix   = "HELLO "
	welcomePrefix = "WELCOME "
)

// How often an unreachable peer is dialed again, and how long one dial or
// handshake may take.
const (
	redialInterval   = 200 * time.Millisecond
	handshakeTimeout = 2 * time.Second
)

// Server is one stand-in IMEX daemon.
type Server struct {
	cfg     imex.Config
	network Network
	reload  chan struct{}

	mu        sync.Mutex
	listening bool
	peers     map[string]*peerLink // by address, self excluded; nil for a peer that dials us
	order     []string             // peers in nodes-file order
	inbound   map[net.Conn]struct{}
	// inboundFrom counts the live handshaken connections each peer address dialed in.
	inboundFrom map[string]int
}

// dials tells whether the daemon at self dials the peer at addr: one TCP link per pair of peers, opened by
// the lower address (the higher one learns the peer from the handshake), so an ensemble of n nodes holds
// n(n-1)/2 links, not n(n-1). A daemon without a bind address dials every peer.
func dials(self, addr string) bool {
	a, errA := netip.ParseAddr(self)
	b, errB := netip.ParseAddr(addr)
	if errA != nil || errB != nil {
		return true
	}
	return a.Less(b)
}

// NewServer returns a daemon for cfg on network (TCP for a process of its
// own); Run starts it.
func NewServer(cfg imex.Config, network Network) *Server {
	return &Server{
		cfg:         cfg,
		network:     network,
		reload:      make(chan struct{}, 1),
		peers:       map[string]*peerLink{},
		inbound:     map[net.Conn]struct{}{},
		inboundFrom: map[string]int{},
	}
}

// Reload asks the running daemon to re-read the nodes file (what SIGHUP does).
// It never blocks; several requests before the next read collapse into one.
func (s *Server) Reload() {
	select {
	case s.reload <- struct{}{}:
	default:
	}
}

// Ready is true while the daemon listens for peers.
func (s *Server) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listening
}

// Peers returns the peers of the nodes file (self excluded) in file order.
func (s *Server) Peers() []imex.PeerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]imex.PeerStatus, 0, len(s.order))
	for _, addr := range s.order {
		state := imex.PeerDisconnected
		if s.peers[addr].isConnected() || s.inboundFrom[addr] > 0 {
			state = imex.PeerConnected
		}
		out = append(out, imex.PeerStatus{Address: addr, State: state})
	}
	return out
}

// Run listens on the peer and command ports, connects to the peers of the
// nodes file and re-reads it on Reload, until ctx ends. It returns an error
// when a port cannot be opened or the nodes file cannot be read at start.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	peerLn, err := s.network.Listen(ctx, s.cfg.PeerAddress())
	if err != nil {
		return fmt.Errorf("listen for peers: %w", err)
	}
	cmdLn, err := s.network.Listen(ctx, s.cfg.CmdAddress())
	if err != nil {
		_ = peerLn.Close()
		return fmt.Errorf("listen for commands: %w", err)
	}
	if err := s.applyNodesFile(ctx); err != nil {
		_ = peerLn.Close()
		_ = cmdLn.Close()
		return err
	}

	var wg sync.WaitGroup
	wg.Go(func() { s.acceptPeers(ctx, peerLn) })
	wg.Go(func() { serveCommands(ctx, cmdLn, s) })
	s.setListening(true)
	logger.Info("IMEX stand-in listening", "peerAddress", peerLn.Addr().String(), "commandAddress", cmdLn.Addr().String())

	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-s.reload:
			if err := s.applyNodesFile(ctx); err != nil {
				// Keep the peers we have: a half-written file must not drop them.
				logger.Error(err, "Re-reading the nodes file failed, keeping the current peers")
			}
		}
	}

	s.setListening(false)
	_ = peerLn.Close()
	_ = cmdLn.Close()
	s.closeAll()
	wg.Wait()
	return nil
}

func (s *Server) setListening(v bool) {
	s.mu.Lock()
	s.listening = v
	s.mu.Unlock()
}

// applyNodesFile reads the nodes file and starts links to new peers and stops
// links to peers no longer listed; links to unchanged peers are kept.
func (s *Server) applyNodesFile(ctx context.Context) error {
	addrs, err := imex.ReadNodesFile(s.cfg.NodesFile)
	if err != nil {
		return err
	}
	wanted := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if a != s.cfg.BindIP {
			wanted = append(wanted, a)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for addr, link := range s.peers {
		if !slices.Contains(wanted, addr) {
			if link != nil {
				link.stop()
			}
			delete(s.peers, addr)
		}
	}
	for _, addr := range wanted {
		if _, ok := s.peers[addr]; !ok {
			var link *peerLink
			if dials(s.cfg.BindIP, addr) {
				link = startPeerLink(ctx, s.network, s.cfg, addr)
			}
			s.peers[addr] = link
		}
	}
	s.order = wanted
	klog.FromContext(ctx).V(2).Info("Applied nodes file", "peers", wanted)
	return nil
}

func (s *Server) closeAll() {
	s.mu.Lock()
	links := make([]*peerLink, 0, len(s.peers))
	for _, l := range s.peers {
		if l != nil {
			links = append(links, l)
		}
	}
	for c := range s.inbound {
		_ = c.Close()
	}
	s.mu.Unlock()
	for _, l := range links {
		l.stop()
	}
}

// acceptPeers answers the handshake of every peer that dials in and holds the
// connection open until either side closes it.
func (s *Server) acceptPeers(ctx context.Context, ln net.Listener) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if !s.listening && ctx.Err() != nil {
			s.mu.Unlock()
			_ = conn.Close()
			continue
		}
		s.inbound[conn] = struct{}{}
		s.mu.Unlock()
		wg.Go(func() {
			defer func() {
				_ = conn.Close()
				s.mu.Lock()
				delete(s.inbound, conn)
				s.mu.Unlock()
			}()
			r := bufio.NewReader(conn)
			_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
			line, err := r.ReadString('\n')
			if err != nil || !strings.HasPrefix(line, helloPrefix) {
				return
			}
			if _, err := fmt.Fprintf(conn, "%s%s\n", welcomePrefix, s.cfg.BindIP); err != nil {
				return
			}
			_ = conn.SetDeadline(time.Time{})
			// The peer is connected while this connection lasts (it dials, we do not).
			from := strings.TrimSpace(strings.TrimPrefix(line, helloPrefix))
			s.mu.Lock()
			s.inboundFrom[from]++
			s.mu.Unlock()
			defer func() {
				s.mu.Lock()
				if s.inboundFrom[from]--; s.inboundFrom[from] <= 0 {
					delete(s.inboundFrom, from)
				}
				s.mu.Unlock()
			}()
			// Hold the connection until the peer goes away.
			_, _ = r.WriteTo(discard{})
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// peerLink keeps one outgoing connection to a peer, re-dialing while it is down.
type peerLink struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	connected bool
}

func startPeerLink(parent context.Context, network Network, cfg imex.Config, addr string) *peerLink {
	ctx, cancel := context.WithCancel(parent)
	l := &peerLink{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		l.run(ctx, network, cfg, addr)
	}()
	return l
}

func (l *peerLink) stop() {
	l.cancel()
	<-l.done
}

func (l *peerLink) isConnected() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.connected
}

func (l *peerLink) setConnected(v bool) {
	l.mu.Lock()
	l.connected = v
	l.mu.Unlock()
}

func (l *peerLink) run(ctx context.Context, network Network, cfg imex.Config, addr string) {
	logger := klog.FromContext(ctx).WithValues("peer", addr)
	target := net.JoinHostPort(addr, fmt.Sprint(cfg.ServerPort))
	for ctx.Err() == nil {
		handshook, err := l.connectOnce(ctx, network, target, cfg.BindIP)
		if handshook && ctx.Err() == nil {
			logger.Info("Lost connection to peer", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(redialInterval):
		}
	}
}

// connectOnce dials, handshakes and then blocks until the connection breaks
// or ctx ends. handshook tells whether the peer was connected in between.
func (l *peerLink) connectOnce(ctx context.Context, network Network, target, self string) (handshook bool, err error) {
	dialCtx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	conn, err := network.Dial(dialCtx, self, target)
	cancel()
	if err != nil {
		return false, err
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	if _, err := fmt.Fprintf(conn, "%s%s\n", helloPrefix, self); err != nil {
		return false, err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return false, err
	}
	if !strings.HasPrefix(line, welcomePrefix) {
		return false, fmt.Errorf("unexpected handshake answer %q", strings.TrimSpace(line))
	}
	_ = conn.SetDeadline(time.Time{})
	l.setConnected(true)
	defer l.setConnected(false)
	klog.FromContext(ctx).V(2).Info("Connected to peer", "peer", target)
	if _, err := r.WriteTo(discard{}); err != nil {
		return true, err
	}
	return true, errors.New("peer closed the connection")
}
