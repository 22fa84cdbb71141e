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
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// echoServer stands in for the API server: it answers each line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = conn.Close() }()
				_, _ = io.Copy(conn, conn)
			}()
		}
	}()
	return ln.Addr().String()
}

func echo(t *testing.T, conn net.Conn, line string) {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, line+"\n"); err != nil {
		t.Fatalf("write through the relay: %v", err)
	}
	got, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || got != line+"\n" {
		t.Fatalf("read through the relay = %q, %v; want %q", got, err, line)
	}
}

// A pod's client dialed in-process reaches the API server through the relay; CutAPIServer closes its
// connection (it reads EOF, as when the relay's socket closes) and refuses new ones until the API server is
// restored, over the listener and in-process alike.
func TestInProcessDialsToTheRelayAreCutAndRefusedWhileDown(t *testing.T) {
	p, err := startAPIProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()

	conn, err := p.DialContext(ctx, "tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial while up: %v", err)
	}
	defer func() { _ = conn.Close() }()
	echo(t, conn, "GET /version")

	p.SetDown(true)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read on a cut connection = %v, want io.EOF", err)
	}
	if _, err := p.DialContext(ctx, "tcp", p.Addr()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial while down = %v, want ECONNREFUSED", err)
	}

	p.SetDown(false)
	again, err := p.DialContext(ctx, "tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial once restored: %v", err)
	}
	defer func() { _ = again.Close() }()
	echo(t, again, "GET /version")
	overTCP, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial the listener: %v", err)
	}
	defer func() { _ = overTCP.Close() }()
	echo(t, overTCP, "GET /healthz")
}
