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
	"context"
	"fmt"
	"time"
)

// runningComponent is a control-plane component running on a goroutine.
type runningComponent struct {
	name string
	done chan struct{}
	err  error
}

func runComponent(name string, run func() error) *runningComponent {
	c := &runningComponent{name: name, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = run()
	}()
	return c
}

// Wait waits for the component to stop after its context ended.
func (c *runningComponent) Wait(timeout time.Duration) error {
	select {
	case <-c.done:
		return c.err
	case <-time.After(timeout):
		return fmt.Errorf("%s did not stop within %s", c.name, timeout)
	}
}

// Exited reports an early exit (an error when the component stopped while
// ctx is still live).
func (c *runningComponent) Exited(ctx context.Context) error {
	select {
	case <-c.done:
		if ctx.Err() != nil {
			return nil
		}
		if c.err != nil {
			return fmt.Errorf("%s exited: %w", c.name, c.err)
		}
		return fmt.Errorf("%s exited", c.name)
	default:
		return nil
	}
}
