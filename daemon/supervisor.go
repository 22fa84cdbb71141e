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

package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/atomicfile"
	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// Restart delays: the first restart is quick, repeated crashes back off, and a
// process that ran for resetBackoffAfter starts the count over.
const (
	defaultRestartDelay    = 100 * time.Millisecond
	defaultMaxRestartDelay = 5 * time.Second
	resetBackoffAfter      = 30 * time.Second
)

// Supervisor owns the IMEX config directory and one IMEX process: it writes
// the config, keeps the process running (restarting it when it exits) and
// applies peer changes by rewriting the nodes file and asking the running
// process to re-read it, without a restart.
type Supervisor struct {
	starter  imex.Starter
	settings IMEXSettings
	minDelay time.Duration
	maxDelay time.Duration
	changed  chan struct{}

	mu     sync.Mutex
	proc   imex.Process
	starts int
}

// SupervisorOption changes a Supervisor's defaults.
type SupervisorOption func(*Supervisor)

// WithRestartDelays sets the first and the longest delay before a restart.
func WithRestartDelays(first, longest time.Duration) SupervisorOption {
	return func(s *Supervisor) { s.minDelay, s.maxDelay = first, longest }
}

// NewSupervisor returns a supervisor that starts IMEX with starter and the
// config rendered from settings.
func NewSupervisor(starter imex.Starter, settings IMEXSettings, opts ...SupervisorOption) (*Supervisor, error) {
	if err := settings.Validate(); err != nil {
		return nil, fmt.Errorf("IMEX supervisor: %w", err)
	}
	s := &Supervisor{
		starter:  starter,
		settings: settings,
		minDelay: defaultRestartDelay,
		maxDelay: defaultMaxRestartDelay,
		changed:  make(chan struct{}, 1),
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Changed receives a value after the process started or exited, so the caller
// can look at readiness again. Notifications collapse; it never blocks the
// supervisor.
func (s *Supervisor) Changed() <-chan struct{} { return s.changed }

// Running tells whether a process is up.
func (s *Supervisor) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// Starts counts the processes started so far (1 + restarts).
func (s *Supervisor) Starts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts
}

func (s *Supervisor) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// writeFiles renders the config and, when none exists yet, an empty nodes
// file: IMEX starts knowing no peer and learns them through SetPeers.
func (s *Supervisor) writeFiles() error {
	cfg, err := RenderConfig(s.settings)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.settings.ConfigDir, 0o755); err != nil {
		return fmt.Errorf("create IMEX config directory: %w", err)
	}
	if err := atomicfile.Write(s.settings.ConfigPath(), cfg, 0o644); err != nil {
		return fmt.Errorf("write IMEX config: %w", err)
	}
	if _, err := os.Stat(s.settings.NodesPath()); errors.Is(err, fs.ErrNotExist) {
		if err := atomicfile.Write(s.settings.NodesPath(), nil, 0o644); err != nil {
			return fmt.Errorf("write IMEX nodes file: %w", err)
		}
	}
	return nil
}

// Run writes the config and keeps IMEX running until ctx ends; then it stops
// the process. A process that exits is started again after a delay that grows
// with repeated failures; the new process reads the current nodes file.
func (s *Supervisor) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	// Under the lock: a SetPeers racing with start-up must not have its
	// nodes file replaced by the initial empty one.
	s.mu.Lock()
	err := s.writeFiles()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	delay := s.minDelay
	for {
		started := time.Now()
		s.mu.Lock()
		// Holding the lock through Start orders it with SetPeers: a peer
		// change either lands in the file before the process reads it or
		// is followed by a Reload of this process.
		proc, err := s.starter.Start(ctx, s.settings.ConfigPath())
		if err == nil {
			s.proc = proc
			s.starts++
		}
		s.mu.Unlock()
		if err != nil {
			logger.Error(err, "Starting IMEX failed", "retryIn", delay)
		} else {
			logger.Info("IMEX started", "starts", s.Starts())
			s.notify()
			select {
			case <-ctx.Done():
				proc.Stop()
				s.mu.Lock()
				s.proc = nil
				s.mu.Unlock()
				return nil
			case <-proc.Done():
			}
			s.mu.Lock()
			s.proc = nil
			s.mu.Unlock()
			s.notify()
			if time.Since(started) >= resetBackoffAfter {
				delay = s.minDelay
			}
			logger.Info("IMEX exited, restarting", "err", proc.Err(), "retryIn", delay)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, s.maxDelay)
	}
}

// SetPeers makes addresses (in ensemble index order, the node itself
// included) the IMEX peer list. When the list differs from the nodes file it
// rewrites the file and asks a running process to re-read it; it reports
// whether anything changed.
func (s *Supervisor) SetPeers(ctx context.Context, addresses []string) (bool, error) {
	content, err := RenderNodes(addresses)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := os.ReadFile(s.settings.NodesPath())
	if err == nil && bytes.Equal(old, content) {
		return false, nil
	}
	if err := os.MkdirAll(s.settings.ConfigDir, 0o755); err != nil {
		return false, fmt.Errorf("create IMEX config directory: %w", err)
	}
	if err := atomicfile.Write(s.settings.NodesPath(), content, 0o644); err != nil {
		return false, fmt.Errorf("write IMEX nodes file: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("IMEX peers changed", "peers", addresses)
	if s.proc != nil {
		if err := s.proc.Reload(); err != nil {
			return true, fmt.Errorf("ask IMEX to re-read its peers: %w", err)
		}
	}
	return true, nil
}

// StopProcessForTest stops the running IMEX process as a crash would (the
// supervisor restarts it). For tests and fault injection in the simulator.
func (s *Supervisor) StopProcessForTest() error {
	s.mu.Lock()
	proc := s.proc
	s.mu.Unlock()
	if proc == nil {
		return errors.New("no IMEX process is running")
	}
	proc.Stop()
	return nil
}
