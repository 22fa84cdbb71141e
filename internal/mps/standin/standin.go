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

// Package standin is a stand-in for NVIDIA's MPS control daemon and its
// control tool, nvidia-cuda-mps-control, for nodes without a real one (the
// simulated cluster, kind with mock NVML, tests). It is a test tool: none of
// the operator's components links it; cmd/mps-control-standin is its binary.
// It keeps the contract package mps relies on:
//   - `-d` (and `-M`, multi-user) starts the daemon in the background and
//     returns once it is ready: the command re-executes itself in a new
//     session with the same arguments and environment and exits 0 when the
//     daemon has created its control endpoint, CUDA_MPS_PIPE_DIRECTORY/control
//     (a unix socket here; default /tmp/nvidia-mps), or 1 if the daemon
//     failed first. The daemon logs to CUDA_MPS_LOG_DIRECTORY/control.log
//     (default /var/log/nvidia-mps).
//   - Without arguments it is the control tool: it sends each line of its
//     stdin to the daemon of CUDA_MPS_PIPE_DIRECTORY and prints the answer;
//     no daemon, or a refused command, exits 1.
//   - Commands: set_default_active_thread_percentage <0..100>,
//     get_default_active_thread_percentage, set_default_device_pinned_mem_limit
//     <device> <limit>, get_default_device_pinned_mem_limit <device>, quit.
//     quit ends the daemon (it removes its control endpoint and exits 0), as
//     SIGTERM does.
//
// What it was told is in CUDA_MPS_LOG_DIRECTORY/standin-state.json (State),
// for tests. It serves no CUDA clients: there is no GPU behind it.
package standin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/computedomain-operator/computedomain-operator/internal/mps"
)

const (
	// daemonizedEnv marks the background process `-d` re-executes.
	daemonizedEnv = "MPS_STANDIN_DAEMONIZED"
	// StateFile is the daemon's record of what it was told, in the log
	// directory.
	StateFile = "standin-state.json"
	// DefaultPipeDirectory and DefaultLogDirectory are nvidia-cuda-mps-control's defaults.
	DefaultPipeDirectory = "/tmp/nvidia-mps"
	DefaultLogDirectory  = "/var/log/nvidia-mps"
	readyTimeout         = 10 * time.Second
)

// State is what the daemon was started with and told since.
type State struct {
	PID            int      `json:"pid"`
	Args           []string `json:"args"`
	MultiUser      bool     `json:"multiUser"`
	VisibleDevices string   `json:"visibleDevices,omitempty"`
	// ActiveThreadPercentage is the last set_default_active_thread_percentage.
	ActiveThreadPercentage *int `json:"activeThreadPercentage,omitempty"`
	// PinnedMemoryLimits are the set_default_device_pinned_mem_limit values
	// by device, as given ("1024M").
	PinnedMemoryLimits map[string]string `json:"pinnedMemoryLimits,omitempty"`
	// Commands are every command received, in order.
	Commands []string `json:"commands,omitempty"`
}

// ReadState reads the state a daemon with this log directory wrote.
func ReadState(logDir string) (State, error) {
	var s State
	b, err := os.ReadFile(filepath.Join(logDir, StateFile))
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

// Main runs the stand-in command line of this process and exits: 1 on
// failure, with the error on stderr. It is the mps-control-standin binary,
// and what a test binary runs to be a stand-in process of its own.
func Main() {
	if err := Run(context.Background(), os.Args, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mps-control-standin:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Run is the stand-in command line (args[0] is the program name).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("mps-control-standin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	daemon := fs.Bool("d", false, "start the MPS control daemon in the background")
	multiUser := fs.Bool("M", false, "multi-user mode (with -d)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = fmt.Fprintln(stdout, "Usage of mps-control-standin (stands in for nvidia-cuda-mps-control): -d [-M] starts the daemon; without flags, sends the commands on stdin to it.")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
		return fmt.Errorf("%w (flags: -d, -M)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (flags: -d, -M)", fs.Args())
	}
	if *multiUser && !*daemon {
		return errors.New("-M needs -d")
	}
	pipeDir, logDir := envDir(mps.EnvPipeDirectory, DefaultPipeDirectory), envDir(mps.EnvLogDirectory, DefaultLogDirectory)
	switch {
	case *daemon && os.Getenv(daemonizedEnv) == "1":
		return serve(ctx, args, pipeDir, logDir, *multiUser)
	case *daemon:
		return daemonize(ctx, args, pipeDir)
	}
	return client(stdin, stdout, pipeDir)
}

func envDir(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// daemonize runs the daemon as a new session's process and returns once it
// is ready.
func daemonize(ctx context.Context, args []string, pipeDir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	control := filepath.Join(pipeDir, mps.ControlName)
	if _, err := os.Stat(control); err == nil {
		if conn, err := dial(pipeDir); err == nil {
			_ = conn.Close()
			return fmt.Errorf("an MPS control daemon already runs with %s=%s", mps.EnvPipeDirectory, pipeDir)
		}
	}
	cmd := exec.Command(self, args[1:]...)
	cmd.Args[0] = args[0] // the daemon's command line is the one it was started with
	cmd.Env = append(os.Environ(), daemonizedEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Its own stdio: nothing of the starter's, which returns now.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(readyTimeout)
	for {
		if conn, err := dial(pipeDir); err == nil {
			_ = conn.Close()
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("the daemon exited before it was ready: %w", err)
		case <-deadline:
			_ = cmd.Process.Kill()
			return fmt.Errorf("the daemon did not create %s within %s", control, readyTimeout)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// dial connects to the control endpoint. The unix socket is reached by a
// path relative to the pipe directory (the process's working directory), so
// a deep directory does not hit the 108-byte limit of socket paths.
func dial(pipeDir string) (net.Conn, error) {
	return net.DialTimeout("unix", relSocket(pipeDir), time.Second)
}

// relSocket is the control socket's path from the working directory: the
// stand-in works in its pipe directory (chdir), so a short path.
func relSocket(pipeDir string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, filepath.Join(pipeDir, mps.ControlName)); err == nil && len(rel) < len(pipeDir)+len(mps.ControlName)+1 {
			return rel
		}
	}
	return filepath.Join(pipeDir, mps.ControlName)
}

// client sends each line of stdin to the daemon and prints the answers.
func client(stdin io.Reader, stdout io.Writer, pipeDir string) error {
	// Work in the pipe directory: short socket paths.
	if err := os.Chdir(pipeDir); err != nil {
		return fmt.Errorf("cannot find MPS control daemon: %w", err)
	}
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		conn, err := dial(pipeDir)
		if err != nil {
			return fmt.Errorf("cannot find MPS control daemon process (%s=%s): %w", mps.EnvPipeDirectory, pipeDir, err)
		}
		answer, err := ask(conn, line)
		if err != nil {
			return fmt.Errorf("command %q: %w", line, err)
		}
		if answer != "" {
			if _, err := fmt.Fprintln(stdout, answer); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

func ask(conn net.Conn, line string) (string, error) {
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintln(conn, line); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", err
	}
	answer := strings.TrimSpace(string(b))
	if msg, ok := strings.CutPrefix(answer, "ERROR: "); ok {
		return "", errors.New(msg)
	}
	return answer, nil
}

// daemonState is the running daemon.
type daemonState struct {
	mu      sync.Mutex
	state   State
	logDir  string
	logFile *os.File
}

func (d *daemonState) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(d.logFile, "[%s] %s\n", time.Now().UTC().Format("2006-01-02 15:04:05.000"), fmt.Sprintf(format, args...))
}

func (d *daemonState) save() error {
	b, err := json.MarshalIndent(d.state, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(d.logDir, StateFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(d.logDir, StateFile))
}

// serve is the daemon: it listens on the control endpoint until quit or
// SIGTERM/SIGINT.
func serve(ctx context.Context, args []string, pipeDir, logDir string, multiUser bool) error {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(logDir, mps.ControlLog), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	if err := os.MkdirAll(pipeDir, 0o755); err != nil {
		return err
	}
	if err := os.Chdir(pipeDir); err != nil {
		return err
	}
	_ = os.Remove(mps.ControlName) // a stale endpoint of a killed daemon
	ln, err := net.Listen("unix", mps.ControlName)
	if err != nil {
		return err
	}
	d := &daemonState{logDir: logDir, logFile: logFile, state: State{
		PID: os.Getpid(), Args: args, MultiUser: multiUser, VisibleDevices: os.Getenv(mps.EnvVisibleDevices),
	}}
	if err := d.save(); err != nil {
		_ = ln.Close()
		return err
	}
	d.logf("Startup (stand-in), pid %d, multi-user %t, devices %q", d.state.PID, multiUser, d.state.VisibleDevices)
	quit := make(chan struct{})
	var quitOnce sync.Once
	go func() {
		select {
		case <-ctx.Done():
			d.logf("Signal received, exiting")
		case <-quit:
		}
		_ = ln.Close()
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			break
		}
		if d.handle(conn) {
			quitOnce.Do(func() { close(quit) })
		}
	}
	_ = os.Remove(mps.ControlName)
	d.logf("Exit")
	return nil
}

// handle answers one connection's command; it reports quit.
func (d *daemonState) handle(conn net.Conn) bool {
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil && line == "" {
		return false
	}
	line = strings.TrimSpace(line)
	answer, quit, err := d.execute(line)
	if err != nil {
		d.logf("Command %q refused: %v", line, err)
		_, _ = fmt.Fprintf(conn, "ERROR: %v\n", err)
		return false
	}
	d.logf("Command %q done", line)
	if answer != "" {
		_, _ = fmt.Fprintln(conn, answer)
	}
	return quit
}

func (d *daemonState) execute(line string) (string, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return "", false, errors.New("empty command")
	}
	var answer string
	quit := false
	switch cmd, params := fields[0], fields[1:]; cmd {
	case "quit":
		quit = true
	case "set_default_active_thread_percentage":
		if len(params) != 1 {
			return "", false, fmt.Errorf("%s takes one value, 0..100", cmd)
		}
		p, err := strconv.Atoi(params[0])
		if err != nil || p < 0 || p > 100 {
			return "", false, fmt.Errorf("%s %q: must be an integer 0..100", cmd, params[0])
		}
		d.state.ActiveThreadPercentage = &p
		answer = strconv.Itoa(p)
	case "get_default_active_thread_percentage":
		answer = "100"
		if p := d.state.ActiveThreadPercentage; p != nil {
			answer = strconv.Itoa(*p)
		}
	case "set_default_device_pinned_mem_limit":
		if len(params) != 2 {
			return "", false, fmt.Errorf("%s takes a device (index or UUID) and a limit (e.g. 1024M, 2G)", cmd)
		}
		if !validLimit(params[1]) {
			return "", false, fmt.Errorf("%s %s %q: the limit must be a number with unit M or G (e.g. 1024M)", cmd, params[0], params[1])
		}
		if !d.visible(params[0]) {
			return "", false, fmt.Errorf("%s: device %q is not one of the daemon's devices (%s=%q)", cmd, params[0], mps.EnvVisibleDevices, d.state.VisibleDevices)
		}
		if d.state.PinnedMemoryLimits == nil {
			d.state.PinnedMemoryLimits = map[string]string{}
		}
		d.state.PinnedMemoryLimits[params[0]] = params[1]
	case "get_default_device_pinned_mem_limit":
		if len(params) != 1 {
			return "", false, fmt.Errorf("%s takes a device (index or UUID)", cmd)
		}
		answer = d.state.PinnedMemoryLimits[params[0]]
	default:
		return "", false, fmt.Errorf("unknown command %q (the stand-in knows quit, set/get_default_active_thread_percentage, set/get_default_device_pinned_mem_limit)", cmd)
	}
	d.state.Commands = append(d.state.Commands, line)
	return answer, quit, d.save()
}

func validLimit(s string) bool {
	n, unit := strings.TrimRight(s, "MG"), strings.TrimLeft(s, "0123456789")
	v, err := strconv.ParseUint(n, 10, 64)
	return err == nil && v > 0 && (unit == "M" || unit == "G")
}

// visible is true for a device index or UUID among CUDA_VISIBLE_DEVICES (all
// devices when unset).
func (d *daemonState) visible(dev string) bool {
	if d.state.VisibleDevices == "" {
		return true
	}
	devs := strings.Split(d.state.VisibleDevices, ",")
	if i, err := strconv.Atoi(dev); err == nil {
		return i >= 0 && i < len(devs)
	}
	return slices.Contains(devs, dev)
}
