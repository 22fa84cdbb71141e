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
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// Command port requests; QUERY is answered with imex.AnswerReady or
// imex.AnswerNotReady, PEERS with the peer table and a last line "END".
const (
	CmdQuery = "QUERY"
	CmdPeers = "PEERS"
	peersEnd = "END"
)

const commandTimeout = 2 * time.Second

// serveCommands answers QUERY and PEERS on the command port until the
// listener closes.
func serveCommands(ctx context.Context, ln net.Listener, s *Server) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Go(func() {
			defer func() { _ = conn.Close() }()
			stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
			defer stop()
			_ = conn.SetDeadline(time.Now().Add(commandTimeout))
			r := bufio.NewReader(conn)
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			switch strings.TrimSpace(line) {
			case CmdQuery:
				answer := imex.AnswerNotReady
				if s.Ready() {
					answer = imex.AnswerReady
				}
				_, _ = fmt.Fprintln(conn, answer)
			case CmdPeers:
				var b strings.Builder
				for _, p := range s.Peers() {
					fmt.Fprintf(&b, "%s %s\n", p.Address, p.State)
				}
				b.WriteString(peersEnd + "\n")
				_, _ = conn.Write([]byte(b.String()))
			default:
				_, _ = fmt.Fprintf(conn, "ERROR unknown command %q, allowed: %s, %s\n", strings.TrimSpace(line), CmdQuery, CmdPeers)
			}
		})
	}
}

// Query asks the daemon at the command address whether it is ready and
// returns its answer (READY or NOT_READY), over TCP.
func Query(ctx context.Context, cmdAddress string) (string, error) {
	return QueryOn(ctx, TCP, cmdAddress)
}

// QueryOn is Query over network.
func QueryOn(ctx context.Context, network Network, cmdAddress string) (string, error) {
	lines, err := request(ctx, network, cmdAddress, CmdQuery, false)
	if err != nil {
		return "", err
	}
	if len(lines) != 1 || (lines[0] != imex.AnswerReady && lines[0] != imex.AnswerNotReady) {
		return "", fmt.Errorf("query %s: unexpected answer %q", cmdAddress, lines)
	}
	return lines[0], nil
}

// QueryPeers asks the daemon at the command address for its peers, over TCP.
func QueryPeers(ctx context.Context, cmdAddress string) ([]imex.PeerStatus, error) {
	return QueryPeersOn(ctx, TCP, cmdAddress)
}

// QueryPeersOn is QueryPeers over network.
func QueryPeersOn(ctx context.Context, network Network, cmdAddress string) ([]imex.PeerStatus, error) {
	lines, err := request(ctx, network, cmdAddress, CmdPeers, true)
	if err != nil {
		return nil, err
	}
	return imex.ParsePeerTable(strings.Join(lines, "\n"))
}

func request(ctx context.Context, network Network, cmdAddress, cmd string, untilEnd bool) ([]string, error) {
	dialCtx, cancel := context.WithTimeout(ctx, commandTimeout)
	conn, err := network.Dial(dialCtx, "", cmdAddress)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", strings.ToLower(cmd), cmdAddress, err)
	}
	defer func() { _ = conn.Close() }()
	deadline := time.Now().Add(commandTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	if _, err := fmt.Fprintln(conn, cmd); err != nil {
		return nil, fmt.Errorf("%s %s: %w", strings.ToLower(cmd), cmdAddress, err)
	}
	var lines []string
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "ERROR") {
			return nil, fmt.Errorf("%s %s: %s", strings.ToLower(cmd), cmdAddress, line)
		}
		if untilEnd && line == peersEnd {
			return lines, nil
		}
		lines = append(lines, line)
		if !untilEnd {
			return lines, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", strings.ToLower(cmd), cmdAddress, err)
	}
	if untilEnd {
		return nil, fmt.Errorf("%s %s: answer ended before %s", strings.ToLower(cmd), cmdAddress, peersEnd)
	}
	return nil, fmt.Errorf("%s %s: no answer", strings.ToLower(cmd), cmdAddress)
}
