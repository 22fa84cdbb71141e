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
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"

	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// CtlProber runs the query tool: `<Ctl> -q -c <config>` must print READY
// (what nvidia-imex-ctl -q prints), and `<Ctl> -N -c <config>` is read as the
// stand-in's peer table when it parses as one.
type CtlProber struct {
	Ctl        string
	ConfigPath string
	// Env is the tool's environment; nil inherits the daemon's.
	Env []string
	// noPeerTable, once set, skips -N: the tool's node table is not the
	// stand-in's (nvidia-imex-ctl), so asking again each probe is waste.
	noPeerTable *atomic.Bool
}

// NewCtlProber returns a prober that runs ctl with the config file.
func NewCtlProber(ctl, configPath string, env []string) CtlProber {
	return CtlProber{Ctl: ctl, ConfigPath: configPath, Env: env, noPeerTable: &atomic.Bool{}}
}

// Probe implements imex.Prober. A query tool that fails or prints anything but
// READY means not ready; only a tool that cannot be run is an error.
func (p CtlProber) Probe(ctx context.Context) (imex.State, error) {
	out, err := p.run(ctx, "-q")
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return imex.State{}, err
	}
	st := imex.State{Ready: strings.TrimSpace(string(out)) == imex.AnswerReady}
	if !st.Ready {
		return st, nil
	}
	// A tool whose node table is not the stand-in's (nvidia-imex-ctl) leaves
	// the peers unknown; a tool that did not finish is an error, not "unknown".
	if p.noPeerTable != nil && p.noPeerTable.Load() {
		return st, nil
	}
	out, err = p.run(ctx, "-N")
	if ctx.Err() != nil {
		return imex.State{}, fmt.Errorf("query IMEX peers: %w", ctx.Err())
	}
	if err == nil {
		peers, perr := imex.ParsePeerTable(string(out))
		if perr == nil {
			st.Peers = imex.PeerMap(peers)
		} else if p.noPeerTable != nil {
			p.noPeerTable.Store(true)
		}
	}
	return st, nil
}

func (p CtlProber) run(ctx context.Context, flag string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, p.Ctl, flag, "-c", p.ConfigPath)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Env = &stdout, p.Env
	err := cmd.Run()
	return stdout.Bytes(), err
}
