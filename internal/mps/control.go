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
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// Names of the per-daemon directories and files.
const (
	PipeDirName = "pipe"
	LogDirName  = "log"
	ShmDirName  = "shm"
	// ControlName is the daemon's control endpoint in the pipe directory.
	ControlName = "control"
	// ControlLog is the daemon's log in the log directory.
	ControlLog = "control.log"
)

// Environment variables of the daemon and its clients.
const (
	EnvPipeDirectory  = "CUDA_MPS_PIPE_DIRECTORY"
	EnvLogDirectory   = "CUDA_MPS_LOG_DIRECTORY"
	EnvVisibleDevices = "CUDA_VISIBLE_DEVICES"
)

// Settings are what a daemon is started with.
type Settings struct {
	// Devices are the UUIDs of the devices the daemon serves
	// (CUDA_VISIBLE_DEVICES).
	Devices []string `json:"devices"`
	// ActiveThreadPercentage, if set, is sent as
	// set_default_active_thread_percentage.
	ActiveThreadPercentage *int `json:"activeThreadPercentage,omitempty"`
	// PinnedMemoryLimits maps a device UUID to its limit in MiB, each sent as
	// set_default_device_pinned_mem_limit <uuid> <MiB>M.
	PinnedMemoryLimits map[string]int64 `json:"pinnedMemoryLimits,omitempty"`
	// MultiUser starts the daemon with -M.
	MultiUser bool `json:"multiUser,omitempty"`
	// Env is more environment for the daemon (the driver's library path).
	Env []string `json:"-"`
}

// Commands are the control commands that apply the settings, in the order
// they are sent.
func (s Settings) Commands() []string {
	var cmds []string
	if s.ActiveThreadPercentage != nil {
		cmds = append(cmds, fmt.Sprintf("set_default_active_thread_percentage %d", *s.ActiveThreadPercentage))
	}
	for _, uuid := range slices.Sorted(maps.Keys(s.PinnedMemoryLimits)) {
		cmds = append(cmds, fmt.Sprintf("set_default_device_pinned_mem_limit %s %dM", uuid, s.PinnedMemoryLimits[uuid]))
	}
	return cmds
}

// Args are the daemon's arguments.
func (s Settings) Args() []string {
	if s.MultiUser {
		return []string{"-d", "-M"}
	}
	return []string{"-d"}
}

// Daemon is one started daemon.
type Daemon struct {
	// ID names the daemon and its directory.
	ID string `json:"id"`
	// Dir is <root>/<ID>.
	Dir string `json:"dir"`
	// PID is the daemon's process; 0 when no process was found.
	PID int `json:"pid,omitempty"`
}

// PipeDir is the daemon's CUDA_MPS_PIPE_DIRECTORY.
func (d Daemon) PipeDir() string { return filepath.Join(d.Dir, PipeDirName) }

// LogDir is the daemon's CUDA_MPS_LOG_DIRECTORY.
func (d Daemon) LogDir() string { return filepath.Join(d.Dir, LogDirName) }

// ShmDir is the directory the daemon's clients get as /dev/shm.
func (d Daemon) ShmDir() string { return filepath.Join(d.Dir, ShmDirName) }

// Control starts and stops MPS control daemons; the GPU plugin's seam.
type Control interface {
	// Start creates the daemon's directories, starts it and applies the
	// settings; on error nothing of it is left.
	Start(ctx context.Context, id string, s Settings) (Daemon, error)
	// Stop quits the daemon (killing it if it does not quit) and removes its
	// directory; a daemon that is not running only loses its directory.
	Stop(ctx context.Context, d Daemon) error
	// Daemons lists the daemons whose directory exists, by ID, each with the
	// process that runs it (PID 0: none).
	Daemons() (map[string]Daemon, error)
}

// ValidID refuses an ID that is not one path element.
func ValidID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) {
		return fmt.Errorf("MPS daemon id %q: must be one non-empty path element", id)
	}
	return nil
}
