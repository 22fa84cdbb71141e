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
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/computedomain/identity"
	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// Defaults of the daemon loop.
const (
	// DefaultProbeInterval is how often the local IMEX process is asked for its
	// state (a local query, not an API call).
	DefaultProbeInterval = time.Second
	// DefaultJoinGrace is how long a newly listed (or restarted) peer may take
	// to connect before it counts as missing.
	DefaultJoinGrace = 3 * time.Second
	// DefaultFirstReportDelay is how long a daemon that is not ready stays
	// silent before it reports why: formation should cost one status write
	// (ready), not two.
	DefaultFirstReportDelay = 10 * time.Second
	// DefaultProbeFailureThreshold is how many probes in a row the running
	// IMEX process may leave unanswered before the node is reported not
	// ready (a kubelet readiness probe's default failureThreshold): one
	// slow answer on a loaded node is not an outage, and reporting it as
	// one costs two status writes and a degraded domain.
	DefaultProbeFailureThreshold = 3
	probeTimeout                 = 5 * time.Second
)

// EnsembleGetter returns the nodes the controller lists in this node's IMEX
// ensemble (from a cache), in any order; the daemon adds itself when missing.
type EnsembleGetter func(ctx context.Context) ([]Peer, error)

// Options configure a Daemon.
type Options struct {
	Identity  identity.Identity
	NodeName  string
	IPAddress string
	Pod       PodRef
	// Client is the daemon's API client.
	Client client.Client
	// Record is the record the daemon reports through: its node's IMEXNode
	// (NewIMEXNodeRecord).
	Record Record
	// Ensemble reads the nodes of the node's clique's ensemble (the
	// IMEXClique); DomainChanged fires after it changed.
	Ensemble      EnsembleGetter
	DomainChanged <-chan struct{}
	// DomainSynced, when set, tells whether Ensemble has read its object at
	// least once; until then the daemon reports nothing (it would report an
	// ensemble of itself alone).
	DomainSynced func() bool
	// Starter runs IMEX; Prober asks it for its state.
	Starter imex.Starter
	Prober  imex.Prober
	// Zero values take the defaults above.
	ProbeInterval         time.Duration
	ProbeFailureThreshold int
	JoinGrace             time.Duration
	FirstReportDelay      time.Duration
	RestartDelay          time.Duration
	Now                   func() time.Time
}

// Daemon is one node's long-lived IMEX daemon: it supervises IMEX, keeps its
// peer list in line with its clique's ensemble and reports its readiness
// through its node's IMEXNode.
type Daemon struct {
	opts       Options
	supervisor *Supervisor
	record     Record
	self       Peer

	specApplied bool
	written     *v1beta1.IMEXNodeStatus
	// tookOver is set when this daemon found its predecessor's report: it
	// is a restart, and its IMEX process is a new one. restartReported is
	// when it first reported that.
	tookOver        bool
	restartReported time.Time
	started         time.Time
	peerSet         map[string]bool
	joining         map[string]time.Time
	lastStarts      int
	// answer is the last probe answer of the IMEX process started
	// answerStarts-th (0: none yet); unanswered counts the probes left
	// unanswered since, the first of them at silentSince.
	answer       imex.State
	answerStarts int
	unanswered   int
	silentSince  time.Time
}

// New checks the options and returns a daemon.
func New(opts Options) (*Daemon, error) {
	var errs []error
	if opts.NodeName == "" {
		errs = append(errs, errors.New("node name must not be empty"))
	}
	if opts.Pod.Name == "" || opts.Pod.Namespace == "" || opts.Pod.UID == "" {
		errs = append(errs, fmt.Errorf("pod name, namespace and UID must all be set (got %q, %q, %q): the pod owns the IMEXNode", opts.Pod.Name, opts.Pod.Namespace, opts.Pod.UID))
	}
	if opts.Client == nil || opts.Record == nil || opts.Ensemble == nil || opts.Starter == nil || opts.Prober == nil {
		errs = append(errs, errors.New("client, record, ensemble getter, IMEX starter and prober must all be set"))
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	if opts.ProbeFailureThreshold <= 0 {
		opts.ProbeFailureThreshold = DefaultProbeFailureThreshold
	}
	if opts.JoinGrace <= 0 {
		opts.JoinGrace = DefaultJoinGrace
	}
	if opts.FirstReportDelay <= 0 {
		opts.FirstReportDelay = DefaultFirstReportDelay
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	settings := IMEXSettings{
		ConfigDir:       opts.Identity.ConfigDir,
		IPAddress:       opts.IPAddress,
		DomainID:        opts.Identity.DomainUID,
		DomainName:      opts.Identity.DomainName,
		DomainNamespace: opts.Identity.DomainNamespace,
		CliqueID:        opts.Identity.CliqueID,
	}
	var supOpts []SupervisorOption
	if opts.RestartDelay > 0 {
		supOpts = append(supOpts, WithRestartDelays(opts.RestartDelay, 50*opts.RestartDelay))
	}
	sup, err := NewSupervisor(opts.Starter, settings, supOpts...)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("compute-domain daemon: %w", err)
	}
	return &Daemon{
		opts:       opts,
		supervisor: sup,
		record:     opts.Record,
		self:       Peer{NodeName: opts.NodeName, IPAddress: opts.IPAddress},
		peerSet:    map[string]bool{},
		joining:    map[string]time.Time{},
	}, nil
}

// Record is the daemon's record (for API write counts).
func (d *Daemon) Record() Record { return d.record }

// Supervisor is the daemon's IMEX supervisor.
func (d *Daemon) Supervisor() *Supervisor { return d.supervisor }

// Run supervises IMEX and reports readiness until ctx ends. It writes the
// IMEXNode's spec once and its status only when it changes; between
// events it only queries the local IMEX process.
func (d *Daemon) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("record", d.record.Key(), "node", d.opts.NodeName)
	ctx = klog.NewContext(ctx, logger)
	d.started = d.opts.Now()
	supDone := make(chan error, 1)
	go func() { supDone <- d.supervisor.Run(ctx) }()
	ticker := time.NewTicker(d.opts.ProbeInterval)
	defer ticker.Stop()
	for {
		d.sync(ctx)
		select {
		case <-ctx.Done():
			return <-supDone
		case err := <-supDone:
			if ctx.Err() != nil {
				return nil // shutting down: the supervisor stopped IMEX
			}
			return fmt.Errorf("IMEX supervisor stopped: %w", err)
		case <-d.opts.DomainChanged:
		case <-d.supervisor.Changed():
		case <-ticker.C:
		}
	}
}

// sync is one level-based pass: spec, peers, readiness.
func (d *Daemon) sync(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if !d.specApplied {
		if err := d.record.ApplySpec(ctx); err != nil {
			logger.Error(err, "Writing the IMEXNode failed; retrying")
			return
		}
		d.specApplied = true
		logger.V(2).Info("IMEXNode written", "imexNode", d.record.Key())
		// A restarted daemon takes over what its predecessor reported, so a
		// stale "ready" is corrected at once rather than after the first
		// report delay. (One read; a new record has no status.)
		if st, err := d.record.Status(ctx); err == nil && len(st.Conditions) > 0 && d.written == nil {
			d.written = st
			d.tookOver = true
		}
	}

	if d.opts.DomainSynced != nil && !d.opts.DomainSynced() {
		return
	}
	listed, err := d.opts.Ensemble(ctx)
	if err != nil {
		logger.Error(err, "Reading the IMEX ensemble failed")
		return
	}
	peers := EnsemblePeers(listed, d.self, d.opts.Identity.CliqueID)
	now := d.opts.Now()
	d.trackJoins(ctx, peers, now)

	// A restart is reported, and held for one probe interval, however fast
	// the new IMEX process is ready: the records' readers are level-based
	// and would not see a shorter interruption, nor would the domain
	// tell that its node's IMEX (and the imports of its workload) restarted.
	restarting := d.tookOver && (d.restartReported.IsZero() || now.Sub(d.restartReported) < d.opts.ProbeInterval)
	obs := Observation{Running: d.supervisor.Running(), Restarted: restarting, Peers: peers, Self: d.self.IPAddress, Joining: map[string]bool{}}
	if obs.Running {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		state, perr := d.opts.Prober.Probe(pctx)
		cancel()
		if perr != nil {
			logger.V(2).Info("Probing IMEX failed", "err", perr, "unansweredInARow", d.unanswered+1)
		}
		obs.State, obs.Unanswered = d.probeAnswer(state, perr, now)
	}
	for a := range d.joining {
		// The join grace ends when the peer connects: losing it afterwards
		// is a loss, however soon after it joined.
		if obs.State.Peers[a] == imex.PeerConnected {
			delete(d.joining, a)
			continue
		}
		obs.Joining[a] = true
	}
	var prev []metav1.Condition
	if d.written != nil {
		prev = d.written.Conditions
	}
	status := MemberStatus(obs, prev, now)
	if d.written != nil && SameStatus(*d.written, status) {
		d.noteRestartReported(restarting, now)
		return
	}
	if ctx.Err() != nil {
		return // shutting down: the pod and its record go away
	}
	if d.written == nil && !status.Ready && now.Sub(d.started) < d.opts.FirstReportDelay {
		return // still forming: report once ready, or why not after the delay
	}
	if err := d.record.ApplyStatus(ctx, status); err != nil {
		if apierrors.IsNotFound(err) {
			d.specApplied = false // deleted under us: write it again
		}
		logger.Error(err, "Writing the IMEXNode status failed; retrying")
		return
	}
	d.written = &status
	d.noteRestartReported(restarting, now)
	logger.Info("Reported IMEX state", "ready", status.Ready, "peers", len(peers)-1, "conditions", status.Conditions)
}

// probeAnswer is what the daemon takes the IMEX process to say: the probe's
// answer, or the last answer of the same process (a new process has said
// nothing yet) until ProbeFailureThreshold probes in a row, spanning at
// least that many probe intervals less one, went unanswered, as a kubelet
// readiness probe counts failures; unanswered is set when it is neither.
// Probes run on events too, so the count alone could run out within a
// second. An answer of "not ready" counts at once: only silence is given
// time.
func (d *Daemon) probeAnswer(state imex.State, err error, now time.Time) (_ imex.State, unanswered bool) {
	starts := d.supervisor.Starts()
	if err == nil {
		d.answer, d.answerStarts, d.unanswered = state, starts, 0
		return state, false
	}
	if d.unanswered == 0 {
		d.silentSince = now
	}
	d.unanswered++
	threshold := d.opts.ProbeFailureThreshold
	withinGrace := d.unanswered < threshold || now.Sub(d.silentSince) < time.Duration(threshold-1)*d.opts.ProbeInterval
	if d.answerStarts == starts && withinGrace {
		return d.answer, false
	}
	return imex.State{}, true
}

// noteRestartReported starts the restart's hold once the record says it.
func (d *Daemon) noteRestartReported(restarting bool, now time.Time) {
	if restarting && d.restartReported.IsZero() {
		d.restartReported = now
	}
}

// trackJoins pushes the peer list to IMEX and remembers, for the grace
// period, which peers are new to it (all of them after an IMEX restart).
func (d *Daemon) trackJoins(ctx context.Context, peers []Peer, now time.Time) {
	addrs := Addresses(peers)
	if _, err := d.supervisor.SetPeers(ctx, addrs); err != nil {
		klog.FromContext(ctx).Error(err, "Updating the IMEX peers failed")
	}
	restarted := d.supervisor.Starts() != d.lastStarts
	d.lastStarts = d.supervisor.Starts()
	next := map[string]bool{}
	for _, a := range addrs {
		next[a] = true
		if (restarted || !d.peerSet[a]) && a != d.self.IPAddress {
			d.joining[a] = now
		}
	}
	d.peerSet = next
	for a, since := range d.joining {
		if !next[a] || now.Sub(since) >= d.opts.JoinGrace {
			delete(d.joining, a)
		}
	}
}
