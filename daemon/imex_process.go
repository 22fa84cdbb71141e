package daemon

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/computedomain-operator/computedomain-operator/daemon/imexstandin"
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

// Start implements Starter.
func (e ExecStarter) Start(_ context.Context, configPath string) (Process, error) {
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

// InProcessStandin runs the IMEX stand-in (package imexstandin) as a
// goroutine, for simulated nodes that share one process. It speaks the same
// network protocol as the stand-in binary.
type InProcessStandin struct{}

// Start implements Starter.
func (InProcessStandin) Start(ctx context.Context, configPath string) (Process, error) {
	cfg, err := imexstandin.LoadConfig(configPath)
	if err != nil {
		return nil, err
	}
	srv := imexstandin.NewServer(cfg)
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
	srv    *imexstandin.Server
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
