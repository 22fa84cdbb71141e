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

package imex

import "context"

// Process is one running IMEX daemon (nvidia-imex or the stand-in).
type Process interface {
	// Done is closed once the process has exited.
	Done() <-chan struct{}
	// Err tells why the process exited; valid once Done is closed.
	Err() error
	// Reload makes the process re-read its nodes file without restarting
	// (SIGHUP for nvidia-imex).
	Reload() error
	// Stop ends the process and waits until it has exited.
	Stop()
}

// Starter starts an IMEX daemon with the given config file (what
// `nvidia-imex -c <config>` does).
type Starter interface {
	Start(ctx context.Context, configPath string) (Process, error)
}

// Prober asks the local IMEX daemon for its state.
type Prober interface {
	Probe(ctx context.Context) (State, error)
}
