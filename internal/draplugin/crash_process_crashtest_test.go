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
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// envChildPoints makes the test binary a child that hits the comma-separated crash points in order and exits 0.
const envChildPoints = "CDO_TEST_CRASH_HOOK_POINTS"

// TestProcessCrashHookKillsTheProcess runs the test binary as a child that hits crash points a, b, c in order
// under the harness's environment, and checks where it died (SIGKILL, so that no deferred function runs) and
// what it logged: the process-kill harness (e2e/processkill) relies on both.
func TestProcessCrashHookKillsTheProcess(t *testing.T) {
	if points := os.Getenv(envChildPoints); points != "" {
		hook := ProcessCrashHook()
		for _, p := range strings.Split(points, ",") {
			if hook != nil {
				hook(p)
			}
		}
		os.Exit(0)
	}
	cases := map[string]struct {
		env        []string
		wantKilled bool
		wantLog    string
	}{
		"CDO_CRASH_AT=2 dies at the second hit":                     {env: []string{EnvCrashAt + "=2"}, wantKilled: true, wantLog: "a\nb\n"},
		"CDO_CRASH_POINT=b dies at b's first hit":                   {env: []string{EnvCrashPoint + "=b"}, wantKilled: true, wantLog: "a\nb\n"},
		"CDO_CRASH_POINT=b before CDO_CRASH_AT=3: whichever first":  {env: []string{EnvCrashAt + "=3", EnvCrashPoint + "=b"}, wantKilled: true, wantLog: "a\nb\n"},
		"CDO_CRASH_AT=1 before CDO_CRASH_POINT=c: whichever first":  {env: []string{EnvCrashAt + "=1", EnvCrashPoint + "=c"}, wantKilled: true, wantLog: "a\n"},
		"a point never hit and a count never reached: runs through": {env: []string{EnvCrashAt + "=9", EnvCrashPoint + "=z"}, wantLog: "a\nb\nc\n"},
		"CDO_CRASH_LOG alone logs every hit":                        {wantLog: "a\nb\nc\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "hits")
			cmd := exec.Command(os.Args[0], "-test.run=^TestProcessCrashHookKillsTheProcess$") //nolint:gosec // the test binary itself
			cmd.Env = append(os.Environ(), envChildPoints+"=a,b,c", EnvCrashLog+"="+logPath)
			cmd.Env = append(cmd.Env, tc.env...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			killed := errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
			if killed != tc.wantKilled || (!killed && err != nil) {
				t.Fatalf("child: err %v, killed by SIGKILL %v, want %v; output:\n%s", err, killed, tc.wantKilled, out)
			}
			log, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			if string(log) != tc.wantLog {
				t.Errorf("crash log %q, want %q", log, tc.wantLog)
			}
		})
	}
}

// Without any of the harness's variables the hook is nil, as in a normal build.
func TestProcessCrashHookIsNilWithoutTheHarnessEnvironment(t *testing.T) {
	for _, v := range []string{EnvCrashAt, EnvCrashLog, EnvCrashPoint} {
		t.Setenv(v, "")
	}
	if ProcessCrashHook() != nil {
		t.Fatal("ProcessCrashHook() is not nil with CDO_CRASH_AT, CDO_CRASH_LOG and CDO_CRASH_POINT empty")
	}
}
