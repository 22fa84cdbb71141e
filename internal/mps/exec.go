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

package mps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
)

// Default timeouts of Exec.
const (
	DefaultReadyTimeout = 10 * time.Second
	DefaultQuitTimeout  = 10 * time.Second
)

// Exec runs the daemons as processes of Binary, each in a directory under
// Root.
type Exec struct {
	// Binary is nvidia-cuda-mps-control (or the stand-in).
	Binary string
	// Root holds one directory per daemon.
	Root string
	// ProcRoot is where the processes are listed; "" is /proc. The daemons
	// are the plugin's own children, so this is the plugin's /proc, not the
	// host root's.
	ProcRoot string
	// Env is more environment for the daemon and the control commands (the
	// driver's library path; a test's re-exec marker).
	Env []string
	// ReadyTimeout bounds the wait for the control endpoint after `-d`
	// returned; QuitTimeout the wait for the process to exit after `quit`,
	// after which it is killed. Zero: the defaults.
	ReadyTimeout, QuitTimeout time.Duration
}

var _ Control = Exec{}

func (e Exec) procRoot() string {
	if e.ProcRoot == "" {
		return "/proc"
	}
	return e.ProcRoot
}

func (e Exec) daemon(id string) Daemon { return Daemon{ID: id, Dir: filepath.Join(e.Root, id)} }

// env is the environment of the daemon and of the control commands.
func (e Exec) env(d Daemon, s Settings) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		EnvPipeDirectory + "=" + d.PipeDir(),
		EnvLogDirectory + "=" + d.LogDir(),
	}
	if len(s.Devices) > 0 {
		env = append(env, EnvVisibleDevices+"="+strings.Join(s.Devices, ","))
	}
	env = append(env, e.Env...)
	return append(env, s.Env...)
}

// Start implements Control: it creates the directories, runs `<binary> -d`
// (which returns once the daemon runs in the background), waits for the
// daemon's control endpoint, finds its process, and sends the settings'
// commands. On error it stops whatever it started.
func (e Exec) Start(ctx context.Context, id string, s Settings) (Daemon, error) {
	if err := ValidID(id); err != nil {
		return Daemon{}, err
	}
	d := e.daemon(id)
	for _, dir := range []string{d.PipeDir(), d.LogDir(), d.ShmDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return Daemon{}, fmt.Errorf("MPS daemon %s: %w", id, err)
		}
	}
	started, err := e.start(ctx, d, s)
	if err != nil {
		if stopErr := e.Stop(ctx, d); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("clean up: %w", stopErr))
		}
		return Daemon{}, fmt.Errorf("start MPS control daemon %s: %w", id, err)
	}
	return started, nil
}

func (e Exec) start(ctx context.Context, d Daemon, s Settings) (Daemon, error) {
	cmd := exec.CommandContext(ctx, e.Binary, s.Args()...)
	cmd.Env = e.env(d, s)
	cmd.Dir = d.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return d, fmt.Errorf("%s %s: %w: %s", e.Binary, strings.Join(s.Args(), " "), err, strings.TrimSpace(out.String()))
	}
	timeout := e.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	deadline := time.Now().Add(timeout)
	control := filepath.Join(d.PipeDir(), ControlName)
	for {
		if _, err := os.Stat(control); err == nil {
			if d.PID = e.findPID(d.PipeDir()); d.PID != 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			return d, fmt.Errorf("%s -d returned, but no daemon with %s=%s created %s within %s (output: %q)",
				e.Binary, EnvPipeDirectory, d.PipeDir(), control, timeout, strings.TrimSpace(out.String()))
		}
		select {
		case <-ctx.Done():
			return d, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, c := range s.Commands() {
		if err := e.command(ctx, d, c); err != nil {
			return d, err
		}
	}
	klog.FromContext(ctx).V(2).Info("Started MPS control daemon", "id", d.ID, "pid", d.PID, "commands", len(s.Commands()), "multiUser", s.MultiUser)
	return d, nil
}

// command sends one control command on the stdin of `<binary>`, as
// `echo <command> | nvidia-cuda-mps-control` does.
func (e Exec) command(ctx context.Context, d Daemon, c string) error {
	cmd := exec.CommandContext(ctx, e.Binary)
	cmd.Env = e.env(d, Settings{})
	cmd.Dir = d.Dir
	cmd.Stdin = strings.NewReader(c + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("MPS control command %q: %w: %s", c, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// Stop implements Control.
func (e Exec) Stop(ctx context.Context, d Daemon) error {
	if err := ValidID(d.ID); err != nil {
		return err
	}
	d.Dir = filepath.Join(e.Root, d.ID)
	pid := e.findPID(d.PipeDir())
	if pid != 0 {
		timeout := e.QuitTimeout
		if timeout <= 0 {
			timeout = DefaultQuitTimeout
		}
		quitCtx, cancel := context.WithTimeout(ctx, timeout)
		err := e.command(quitCtx, d, "quit")
		cancel()
		if err != nil {
			klog.FromContext(ctx).Info("MPS control daemon did not take quit", "id", d.ID, "pid", pid, "err", err.Error())
		}
		if !e.waitExit(ctx, pid, timeout) {
			klog.FromContext(ctx).Info("MPS control daemon did not quit in time; killing it", "id", d.ID, "pid", pid, "timeout", timeout)
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("stop MPS control daemon %s: kill %d: %w", d.ID, pid, err)
			}
			if !e.waitExit(ctx, pid, timeout) {
				return fmt.Errorf("stop MPS control daemon %s: process %d still runs after SIGKILL", d.ID, pid)
			}
		}
		// The daemon left its starter and was adopted by the process
		// reaper of its PID namespace, which in the plugin's container is
		// the plugin itself (PID 1): reap it, or every stopped daemon stays
		// a zombie. Anywhere else it is not our child (ECHILD, ignored).
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		klog.FromContext(ctx).V(2).Info("Stopped MPS control daemon", "id", d.ID, "pid", pid)
	}
	if err := os.RemoveAll(d.Dir); err != nil {
		return fmt.Errorf("stop MPS control daemon %s: %w", d.ID, err)
	}
	return nil
}

func (e Exec) waitExit(ctx context.Context, pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for e.alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// Daemons implements Control.
func (e Exec) Daemons() (map[string]Daemon, error) {
	entries, err := os.ReadDir(e.Root)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Daemon{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list MPS daemons: %w", err)
	}
	pids := e.daemonPIDs()
	out := map[string]Daemon{}
	for _, ent := range entries {
		if !ent.IsDir() {
			continue
		}
		d := e.daemon(ent.Name())
		d.PID = pids[d.PipeDir()]
		out[d.ID] = d
	}
	return out, nil
}

// findPID is the process of the daemon whose pipe directory is pipeDir, 0 if
// none runs.
func (e Exec) findPID(pipeDir string) int { return e.daemonPIDs()[pipeDir] }

// daemonPIDs maps the pipe directory of every running daemon of Binary
// (its command line has -d; the control commands have not) to its process.
func (e Exec) daemonPIDs() map[string]int {
	out := map[string]int{}
	entries, err := os.ReadDir(e.procRoot())
	if err != nil {
		return out
	}
	base := filepath.Base(e.Binary)
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join(e.procRoot(), ent.Name())
		args := readNulList(filepath.Join(dir, "cmdline"))
		if len(args) == 0 || filepath.Base(args[0]) != base || !slices.Contains(args[1:], "-d") {
			continue
		}
		if !e.alive(pid) {
			continue
		}
		for _, kv := range readNulList(filepath.Join(dir, "environ")) {
			if v, ok := strings.CutPrefix(kv, EnvPipeDirectory+"="); ok && strings.HasPrefix(v, e.Root+string(filepath.Separator)) {
				out[v] = pid
			}
		}
	}
	return out
}

// alive is true for a process that exists and is not a zombie.
func (e Exec) alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join(e.procRoot(), strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	state := stat[i+2]
	return state != 'Z' && state != 'X'
}

func readNulList(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}
