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
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"

	"k8s.io/klog/v2"
)

// componentTB lets the upstream in-process server helpers (which take a
// ktesting.TB) run outside `go test`: logs go to the logger, cleanups run on
// close in reverse order, and Fatal ends the calling goroutine like
// testing.T.FailNow does (callers run the helper through runGuarded).
type componentTB struct {
	name   string
	logger klog.Logger

	mu       sync.Mutex
	cleanups []func()
	failures []string
	tempDirs []string
	root     string
}

func newComponentTB(name, root string, logger klog.Logger) *componentTB {
	return &componentTB{name: name, root: root, logger: logger}
}

func (t *componentTB) Attr(key, value string) {}
func (t *componentTB) Chdir(dir string)       { t.Fatalf("Chdir is not supported in a shared process") }
func (t *componentTB) Helper()                {}
func (t *componentTB) Name() string           { return t.name }

func (t *componentTB) Setenv(key, value string) {
	prev, had := os.LookupEnv(key)
	_ = os.Setenv(key, value)
	t.Cleanup(func() {
		if had {
			_ = os.Setenv(key, prev)
		} else {
			_ = os.Unsetenv(key)
		}
	})
}

func (t *componentTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *componentTB) Log(args ...any) { t.logger.V(4).Info(fmt.Sprint(args...)) }
func (t *componentTB) Logf(format string, args ...any) {
	t.logger.V(4).Info(fmt.Sprintf(format, args...))
}

func (t *componentTB) Error(args ...any) { t.fail(fmt.Sprint(args...)) }
func (t *componentTB) Errorf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
}
func (t *componentTB) Fail() { t.fail("failed") }

func (t *componentTB) FailNow() {
	t.fail("failed")
	runtime.Goexit()
}

func (t *componentTB) Fatal(args ...any) {
	t.fail(fmt.Sprint(args...))
	runtime.Goexit()
}

func (t *componentTB) Fatalf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (t *componentTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.failures) > 0
}

func (t *componentTB) Skip(args ...any)                 { t.Fatal(args...) }
func (t *componentTB) Skipf(format string, args ...any) { t.Fatalf(format, args...) }
func (t *componentTB) SkipNow()                         { t.FailNow() }
func (t *componentTB) Skipped() bool                    { return false }

func (t *componentTB) TempDir() string {
	dir, err := os.MkdirTemp(t.root, "tmp-")
	if err != nil {
		t.Fatalf("create temp dir: %v", err)
	}
	t.mu.Lock()
	t.tempDirs = append(t.tempDirs, dir)
	t.mu.Unlock()
	return dir
}

func (t *componentTB) fail(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failures = append(t.failures, msg)
	t.logger.Error(nil, "Component reported a failure", "component", t.name, "message", msg)
}

// err returns the recorded failures, nil when there are none.
func (t *componentTB) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.failures) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %v", t.name, t.failures)
}

// close runs the cleanups in reverse order and removes the temp dirs.
func (t *componentTB) close() {
	t.mu.Lock()
	cleanups := slices.Clone(t.cleanups)
	t.cleanups = nil
	dirs := t.tempDirs
	t.tempDirs = nil
	t.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

// runGuarded runs f on its own goroutine so that a Fatal inside (which ends
// the goroutine) turns into an error instead of ending the caller.
func runGuarded(t *componentTB, f func() error) error {
	done := make(chan error, 1)
	go func() {
		finished := false
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("%s: panic: %v\n%s", t.name, r, debug.Stack())
				return
			}
			if !finished {
				done <- fmt.Errorf("%s: aborted: %w", t.name, t.err())
			}
		}()
		err := f()
		finished = true
		if err == nil {
			err = t.err()
		}
		done <- err
	}()
	return <-done
}
