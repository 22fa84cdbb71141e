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

//go:build crashtest

package draplugin

import (
	"os"
	"strconv"
	"sync"
	"syscall"
)

// Environment of a plugin binary built with -tags crashtest.
const (
	// EnvCrashAt is n: the process SIGKILLs itself at its n-th crash-point
	// hit (unset or 0: never).
	EnvCrashAt = "CDO_CRASH_AT"
	// EnvCrashLog names a file each hit point is appended to, one a line,
	// synced before the process goes on (or dies).
	EnvCrashLog = "CDO_CRASH_LOG"
	// EnvCrashPoint names a crash point whose first hit kills the process
	// too (whichever comes first with CDO_CRASH_AT): how a harness reaches a
	// point its random kills left out.
	EnvCrashPoint = "CDO_CRASH_POINT"
)

// ProcessCrashHook is, in a binary built with -tags crashtest, a hook that
// kills the whole process with SIGKILL at the CDO_CRASH_AT-th crash-point
// hit, so that no deferred function runs, and logs every hit to
// CDO_CRASH_LOG, or at the first hit of CDO_CRASH_POINT. It is nil when none
// is set.
func ProcessCrashHook() CrashHook {
	at, _ := strconv.Atoi(os.Getenv(EnvCrashAt))
	logPath, target := os.Getenv(EnvCrashLog), os.Getenv(EnvCrashPoint)
	if at <= 0 && logPath == "" && target == "" {
		return nil
	}
	var mu sync.Mutex
	hits := 0
	return func(point string) bool {
		mu.Lock()
		defer mu.Unlock()
		hits++
		if logPath != "" {
			if f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
				_, _ = f.WriteString(point + "\n")
				_ = f.Sync()
				_ = f.Close()
			}
		}
		if hits == at || (target != "" && point == target) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal ends the process; nothing after the point runs
		}
		return false
	}
}
