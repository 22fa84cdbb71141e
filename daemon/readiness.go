package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/computedomain-operator/computedomain-operator/daemon/imexstandin"
)

// IMEXState is what the local IMEX daemon says about itself.
type IMEXState struct {
	// Ready is true when the query answered READY.
	Ready bool
	// Peers maps peer addresses to their connection state; nil when the IMEX
	// build does not tell (nvidia-imex-ctl's node table is not parsed).
	Peers map[string]imexstandin.PeerState
}

// Prober asks the local IMEX daemon for its state.
type Prober interface {
	Probe(ctx context.Context) (IMEXState, error)
}

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

// Probe implements Prober. A query tool that fails or prints anything but
// READY means not ready; only a tool that cannot be run is an error.
func (p CtlProber) Probe(ctx context.Context) (IMEXState, error) {
	out, err := p.run(ctx, "-q")
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return IMEXState{}, err
	}
	st := IMEXState{Ready: strings.TrimSpace(string(out)) == imexstandin.AnswerReady}
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
		return IMEXState{}, fmt.Errorf("query IMEX peers: %w", ctx.Err())
	}
	if err == nil {
		peers, perr := imexstandin.ParsePeerTable(string(out))
		if perr == nil {
			st.Peers = peerMap(peers)
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

// StandinProber talks to the stand-in's command port directly, without a
// query process (for simulated nodes in one process).
type StandinProber struct {
	CmdAddress string
}

// Probe implements Prober. No answer means not ready.
func (p StandinProber) Probe(ctx context.Context) (IMEXState, error) {
	answer, err := imexstandin.Query(ctx, p.CmdAddress)
	if err != nil || answer != imexstandin.AnswerReady {
		return IMEXState{}, nil
	}
	peers, err := imexstandin.QueryPeers(ctx, p.CmdAddress)
	if err != nil {
		return IMEXState{}, nil
	}
	return IMEXState{Ready: true, Peers: peerMap(peers)}, nil
}

func peerMap(peers []imexstandin.PeerStatus) map[string]imexstandin.PeerState {
	m := make(map[string]imexstandin.PeerState, len(peers))
	for _, p := range peers {
		m[p.Address] = p.State
	}
	return m
}

// MissingPeers returns the addresses of expected peers (self excluded) that
// IMEX does not report connected, sorted. With no peer information (real
// nvidia-imex) nothing is reported missing: READY is all we can know.
func (s IMEXState) MissingPeers(self string, expected []string) []string {
	if s.Peers == nil {
		return nil
	}
	var missing []string
	for _, a := range expected {
		if a != self && s.Peers[a] != imexstandin.PeerConnected {
			missing = append(missing, a)
		}
	}
	slices.Sort(missing)
	return missing
}
