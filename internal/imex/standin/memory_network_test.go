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
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

const linkAddress = "127.0.77.1:50000"

// link is one accepted connection: the dialer's end and the listener's end.
func link(t *testing.T, n *MemoryNetwork, ln net.Listener) (dialed, accepted net.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	dialed, err := n.Dial(ctx, "127.0.77.2", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	accepted, err = ln.Accept()
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	t.Cleanup(func() { _ = dialed.Close(); _ = accepted.Close() })
	return dialed, accepted
}

func listen(t *testing.T, n *MemoryNetwork) net.Listener {
	t.Helper()
	ln, err := n.Listen(context.Background(), linkAddress)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// readEOF reads from c until an error and fails unless it is io.EOF within a
// second: a dead link must be seen, not kept.
func readEOF(t *testing.T, c net.Conn, who string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, err := io.Copy(io.Discard, c)
	if err != nil {
		t.Fatalf("%s: read after the other end closed = %v, want io.EOF (the link looks alive)", who, err)
	}
}

func TestMemoryLinkCarriesTheBytesInOrderBothWays(t *testing.T) {
	n := NewMemoryNetwork()
	dialed, accepted := link(t, n, listen(t, n))
	go func() { _, _ = dialed.Write([]byte("HELLO 127.0.77.2\n")) }()
	line, err := bufio.NewReader(accepted).ReadString('\n')
	if err != nil || line != "HELLO 127.0.77.2\n" {
		t.Fatalf("listener read %q, %v", line, err)
	}
	go func() { _, _ = accepted.Write([]byte("WELCOME 127.0.77.1\n")) }()
	line, err = bufio.NewReader(dialed).ReadString('\n')
	if err != nil || line != "WELCOME 127.0.77.1\n" {
		t.Fatalf("dialer read %q, %v", line, err)
	}
	if got := accepted.RemoteAddr().String(); got[:len("127.0.77.2:")] != "127.0.77.2:" {
		t.Errorf("accepted end's remote address = %s, want the dialer's IP", got)
	}
	if got := dialed.RemoteAddr().String(); got != linkAddress {
		t.Errorf("dialed end's remote address = %s, want %s", got, linkAddress)
	}
}

// A stopped or killed stand-in closes its ends of its links: its peers must
// read EOF at once, whichever side dialed.
func TestMemoryLinkClosedAtOneEndIsSeenAtTheOther(t *testing.T) {
	for name, dialerCloses := range map[string]bool{"dialer closes": true, "listener side closes": false} {
		t.Run(name, func(t *testing.T) {
			n := NewMemoryNetwork()
			dialed, accepted := link(t, n, listen(t, n))
			closing, other := accepted, dialed
			if dialerCloses {
				closing, other = dialed, accepted
			}
			if err := closing.Close(); err != nil {
				t.Fatal(err)
			}
			readEOF(t, other, "other end")
			if _, err := other.Write([]byte("x")); err == nil {
				t.Error("write to a closed link succeeded")
			}
		})
	}
}

func TestMemoryDialWithoutListenerIsRefused(t *testing.T) {
	n := NewMemoryNetwork()
	_, err := n.Dial(context.Background(), "", linkAddress)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial with nobody listening = %v, want ECONNREFUSED", err)
	}
	ln := listen(t, n)
	_ = ln.Close()
	if _, err := n.Dial(context.Background(), "", linkAddress); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial after the listener closed = %v, want ECONNREFUSED", err)
	}
}

func TestMemoryListenOnATakenAddressFailsUntilItIsFree(t *testing.T) {
	n := NewMemoryNetwork()
	ln := listen(t, n)
	if _, err := n.Listen(context.Background(), linkAddress); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("second listen = %v, want EADDRINUSE", err)
	}
	_ = ln.Close()
	again, err := n.Listen(context.Background(), linkAddress)
	if err != nil {
		t.Fatalf("listen after close = %v", err)
	}
	_ = again.Close()
	if _, err := n.Listen(context.Background(), "127.0.77.1:0"); err == nil {
		t.Error("listen on port 0 succeeded; the memory network needs fixed ports")
	}
}

// Connections dialed but not accepted when the listener closes are closed:
// their dialers read EOF, as after a reset, and Accept fails with
// net.ErrClosed.
func TestMemoryListenerClosedWithPendingDialsClosesThem(t *testing.T) {
	n := NewMemoryNetwork()
	ln := listen(t, n)
	pending, err := n.Dial(context.Background(), "", linkAddress)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pending.Close() }()
	_ = ln.Close()
	readEOF(t, pending, "pending dialer")
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("accept after close = %v, want net.ErrClosed", err)
	}
}

func TestMemoryLinkDeadlineExpiresLikeASocket(t *testing.T) {
	n := NewMemoryNetwork()
	dialed, _ := link(t, n, listen(t, n))
	_ = dialed.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := dialed.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline = %v, want os.ErrDeadlineExceeded", err)
	}
}
