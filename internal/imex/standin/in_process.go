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
	"sync"

	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// InProcess returns the IMEX starter and prober of a simulated node that
// runs in one process with others: the stand-in as a goroutine on TCP, asked
// directly on its command port at ipAddress. configPath is unused (the
// starter is handed it on each start).
func InProcess(ipAddress, configPath string) (imex.Starter, imex.Prober) {
	return InProcessOn(TCP)(ipAddress, configPath)
}

// InProcessOn is InProcess on network: with a [MemoryNetwork] shared by all
// the stand-ins of a process, their links and queries cost no file
// descriptor.
func InProcessOn(network Network) func(ipAddress, configPath string) (imex.Starter, imex.Prober) {
	return func(ipAddress, _ string) (imex.Starter, imex.Prober) {
		prober := NewCommandPortProber(ipAddress)
		prober.Network = network
		return InProcessStarter{Network: network}, prober
	}
}

// InProcessStarter runs the stand-in as a goroutine, for simulated nodes that
// share one process. It speaks the same protocol as the stand-in binary.
type InProcessStarter struct {
	// Network is where the stand-ins listen and dial; nil is TCP.
	Network Network
}

// Start implements imex.Starter.
func (s InProcessStarter) Start(ctx context.Context, configPath string) (imex.Process, error) {
	cfg, err := imex.LoadConfig(configPath)
	if err != nil {
		return nil, err
	}
	srv := NewServer(cfg, orTCP(s.Network))
	// The process outlives nothing but its own Stop: the supervisor stops it
	// explicitly when its context ends.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &inProcess{srv: srv, cancel: cancel, done: make(chan struct{})}
	go func() {
		p.err = srv.Run(runCtx)
		if p.err == nil && runCtx.Err() != nil {
			p.err = context.Canceled
		}
		close(p.done)
	}()
	return p, nil
}

type inProcess struct {
	srv    *Server
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	once   sync.Once
}

func (p *inProcess) Done() <-chan struct{} { return p.done }
func (p *inProcess) Err() error            { return p.err }
func (p *inProcess) Reload() error         { p.srv.Reload(); return nil }

// Stop ends the stand-in; its peers see the connections close, as when a
// process is killed.
func (p *inProcess) Stop() {
	p.once.Do(p.cancel)
	<-p.done
}
