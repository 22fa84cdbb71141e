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
	"context"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// ExecStarter runs the IMEX daemon as a child process: `<Binary> -c <config>`.
// Reload sends SIGHUP; Stop sends SIGTERM and, after StopTimeout, SIGKILL.
type ExecStarter struct {
	Binary string
	// Env is the environment of the process; nil inherits the daemon's.
	Env            []string
	Stdout, Stderr io.Writer
	StopTimeout    time.Duration
}

// Start implements imex.Starter.
func (e ExecStarter) Start(_ context.Context, configPath string) (imex.Process, error) {
	cmd := exec.Command(e.Binary, "-c", configPath)
	cmd.Stdout, cmd.Stderr, cmd.Env = e.Stdout, e.Stderr, e.Env
	// IMEX dies with the daemon: a restarted daemon must find the ports
	// free, not held by an orphan.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", e.Binary, err)
	}
	timeout := e.StopTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	p := &execProcess{cmd: cmd, done: make(chan struct{}), stopTimeout: timeout}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

type execProcess struct {
	cmd         *exec.Cmd
	done        chan struct{}
	err         error
	stopTimeout time.Duration
}

func (p *execProcess) Done() <-chan struct{} { return p.done }
func (p *execProcess) Err() error            { return p.err }

// Pid is the process ID (tests kill it to play a crash).
func (p *execProcess) Pid() int { return p.cmd.Process.Pid }

func (p *execProcess) Reload() error { return p.cmd.Process.Signal(syscall.SIGHUP) }

func (p *execProcess) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(p.stopTimeout):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}
