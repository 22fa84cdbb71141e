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
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
	"github.com/computedomain-operator/computedomain-operator/controllers/imexclique"
	"github.com/computedomain-operator/computedomain-operator/internal/computedomain/identity"
	"github.com/computedomain-operator/computedomain-operator/internal/imex"
	"github.com/computedomain-operator/computedomain-operator/internal/imex/standin"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
	cdtest "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

const operatorNS = "nvidia-dra"

func newFakeClient(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&v1beta1.ComputeDomain{}, &v1beta1.IMEXNode{}).Build()
}

// fakeController plays the controllers' part that the daemons depend on: it
// keeps each clique's ensemble from the IMEXNodes (imexclique.Ensemble), gives
// the domain, whose workload runs on every node, the status the controller
// computes from them, and tells the daemons when an ensemble changed.
type fakeController struct {
	c       client.Client
	key     client.ObjectKey
	channel int32

	mu        sync.Mutex
	ensembles map[string]v1beta1.IMEXCliqueStatus
	listeners []chan struct{}
}

// ensemble reads clique's ensemble as the daemon's IMEXClique watch does.
func (f *fakeController) ensemble(clique string) EnsembleGetter {
	return func(context.Context) ([]Peer, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var peers []Peer
		for _, n := range f.ensembles[clique].Nodes {
			peers = append(peers, Peer{NodeName: n.Name, IPAddress: n.IPAddress, Index: n.Index})
		}
		return peers, nil
	}
}

// startFakeController runs a fakeController that gives the domain channel
// until the test ends; it returns the client, the controller and a context
// that the test's end cancels.
func startFakeController(t *testing.T, cd *v1beta1.ComputeDomain, channel int32) (client.Client, *fakeController, context.Context) {
	t.Helper()
	c := newFakeClient(t, cd)
	ctrl := &fakeController{c: c, key: client.ObjectKeyFromObject(cd), channel: channel, ensembles: map[string]v1beta1.IMEXCliqueStatus{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go ctrl.run(ctx, t)
	return c, ctrl, ctx
}

func (f *fakeController) listen() <-chan struct{} {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	f.listeners = append(f.listeners, ch)
	f.mu.Unlock()
	return ch
}

func (f *fakeController) run(ctx context.Context, t *testing.T) {
	for ctx.Err() == nil {
		if err := f.reconcile(ctx); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
			t.Errorf("fake controller: %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (f *fakeController) reconcile(ctx context.Context) error {
	var cd v1beta1.ComputeDomain
	if err := f.c.Get(ctx, f.key, &cd); err != nil {
		return err
	}
	var list v1beta1.IMEXNodeList
	if err := f.c.List(ctx, &list, client.InNamespace(operatorNS)); err != nil {
		return err
	}
	byClique := map[string][]v1beta1.IMEXNode{}
	for _, n := range list.Items {
		byClique[n.Spec.CliqueID] = append(byClique[n.Spec.CliqueID], n)
	}
	f.mu.Lock()
	changed := false
	for clique, nodes := range byClique {
		ens, _ := imexclique.Ensemble(f.ensembles[clique], nodes, v1beta1.NVL72CliqueSize, nil)
		if !equality.Semantic.DeepEqual(ens, f.ensembles[clique]) {
			f.ensembles[clique], changed = ens, true
		}
	}
	var nodes []status.Node
	for i := range list.Items {
		n := &list.Items[i]
		node := status.Node{Name: n.Name, IMEX: n}
		for _, e := range f.ensembles[n.Spec.CliqueID].Nodes {
			if e.Name == n.Name && e.IPAddress == n.Spec.IPAddress {
				node.Index = ptr.To(e.Index)
			}
		}
		nodes = append(nodes, node)
	}
	f.mu.Unlock()
	channels := map[string]int32{}
	for _, c := range status.Cliques(nodes) {
		channels[c] = f.channel
	}
	st := status.Compute(status.Input{Domain: &cd, Nodes: nodes, Channels: channels, Now: metav1.Now()})
	if !equality.Semantic.DeepEqual(st, cd.Status) {
		cd.Status = st
		if err := f.c.Status().Update(ctx, &cd); err != nil {
			return err
		}
	}
	if changed {
		f.notify()
	}
	return nil
}

func (f *fakeController) notify() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.listeners {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

type testNode struct {
	t      *testing.T
	name   string
	ip     string
	daemon *Daemon
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

func startDaemon(t *testing.T, c client.Client, ctrl *fakeController, cd *v1beta1.ComputeDomain, name, ip, clique string, tweaks ...func(*Options)) *testNode {
	t.Helper()
	id := identity.Identity{DomainUID: string(cd.UID), DomainName: cd.Name, DomainNamespace: cd.Namespace, CliqueID: clique, ConfigDir: filepath.Join(t.TempDir(), "imex")}
	opts := Options{
		Identity:  id,
		NodeName:  name,
		IPAddress: ip,
		Pod:       PodRef{Name: "cd-daemon-" + name, Namespace: operatorNS, UID: types.UID("pod-" + name)},
		Client:    c,
		Record: NewIMEXNodeRecord(c, PodRef{Name: "cd-daemon-" + name, Namespace: operatorNS, UID: types.UID("pod-" + name)},
			v1beta1.IMEXNodeSpec{NodeName: name, IPAddress: ip, CliqueID: clique}),
		Ensemble:         ctrl.ensemble(clique),
		DomainChanged:    ctrl.listen(),
		Starter:          standin.InProcessStarter{},
		Prober:           standin.NewCommandPortProber(ip),
		ProbeInterval:    50 * time.Millisecond,
		JoinGrace:        DefaultJoinGrace,
		FirstReportDelay: 5 * time.Second,
		RestartDelay:     20 * time.Millisecond,
	}
	for _, tweak := range tweaks {
		tweak(&opts)
	}
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &testNode{t: t, name: name, ip: ip, daemon: d, cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- d.Run(ctx) }()
	t.Cleanup(n.stop)
	return n
}

func (n *testNode) stop() {
	n.once.Do(func() {
		n.cancel()
		select {
		case err := <-n.done:
			if err != nil {
				n.t.Errorf("daemon on %s: %v", n.name, err)
			}
		case <-time.After(10 * time.Second):
			n.t.Errorf("daemon on %s did not stop", n.name)
		}
	})
}

func waitForDomain(t *testing.T, c client.Client, key client.ObjectKey, what string, cond func(*v1beta1.ComputeDomain) bool) *v1beta1.ComputeDomain {
	t.Helper()
	deadline := time.Now().Add(eventually)
	var cd v1beta1.ComputeDomain
	for {
		if err := c.Get(context.Background(), key, &cd); err != nil {
			t.Fatal(err)
		}
		if cond(&cd) {
			return &cd
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the domain: %s; status: %+v", what, cd.Status)
		}
		time.Sleep(poll)
	}
}

func condition(cd *v1beta1.ComputeDomain, condType string) metav1.Condition {
	if c := meta.FindStatusCondition(cd.Status.Conditions, condType); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func TestThreeDaemonsFormAnEnsembleLoseANodeAndRecover(t *testing.T) {
	cd := cdtest.MakeComputeDomain("train", "team-a").UID("0f1e2d3c-aaaa-bbbb-cccc-000000000001").Obj()
	c, ctrl, _ := startFakeController(t, cd, 7)

	ips := loopbackIPs(3)
	var nodes []*testNode
	for i, ip := range ips {
		nodes = append(nodes, startDaemon(t, c, ctrl, cd, fmt.Sprintf("gb200-%d", i), ip, "cluster-a.1"))
	}

	// The domain forms: all three nodes Ready, with their addresses and
	// indices, and every daemon wrote its record twice (spec, ready).
	formed := waitForDomain(t, c, ctrl.key, "Ready with 3 nodes", func(cd *v1beta1.ComputeDomain) bool {
		return cd.Status.Status == v1beta1.ComputeDomainStatusReady && cd.Status.ReadyNodes == 3
	})
	// Indices are the controller's, in order of joining: each node has one,
	// and they are 0..2.
	var got []string
	indices := map[int32]bool{}
	for _, n := range formed.Status.Nodes {
		got = append(got, fmt.Sprintf("%s %s %s %s", n.Name, n.IPAddress, n.CliqueID, n.Status))
		indices[n.Index] = true
	}
	want := []string{
		fmt.Sprintf("gb200-0 %s cluster-a.1 Ready", ips[0]),
		fmt.Sprintf("gb200-1 %s cluster-a.1 Ready", ips[1]),
		fmt.Sprintf("gb200-2 %s cluster-a.1 Ready", ips[2]),
	}
	if diff := cmp.Diff(want, got, cmpSortStrings); diff != "" {
		t.Errorf("status.nodes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int32]bool{0: true, 1: true, 2: true}, indices); diff != "" {
		t.Errorf("indices (-want +got):\n%s", diff)
	}
	for _, n := range nodes {
		if w := n.daemon.Record().Writes(); w > 2 {
			t.Errorf("daemon on %s made %d API writes to form the domain, want at most 2 (spec, ready); the plugin's label is the third", n.name, w)
		}
		if ch, ok := formed.ChannelReady(n.name, "cluster-a.1"); !ok || ch != 7 {
			t.Errorf("ChannelReady(%s) = %d, %v; want 7, true", n.name, ch, ok)
		}
	}

	// Node 1's daemon goes away (its IMEX connections close): the others see
	// the loss and the domain is Degraded naming node 1.
	nodes[1].stop()
	degraded := waitForDomain(t, c, ctrl.key, "Degraded naming gb200-1's peers", func(cd *v1beta1.ComputeDomain) bool {
		d := condition(cd, v1beta1.ComputeDomainConditionDegraded)
		return d.Status == metav1.ConditionTrue && strings.Contains(d.Message, "gb200-1 ("+ips[1]+")")
	})
	t.Logf("Degraded: %s", condition(degraded, v1beta1.ComputeDomainConditionDegraded).Message)

	// The daemon comes back (a new pod on the same node): the ensemble heals.
	nodes[1] = startDaemon(t, c, ctrl, cd, "gb200-1", ips[1], "cluster-a.1")
	waitForDomain(t, c, ctrl.key, "Ready and not Degraded again", func(cd *v1beta1.ComputeDomain) bool {
		return cd.Status.Status == v1beta1.ComputeDomainStatusReady && cd.Status.ReadyNodes == 3 &&
			condition(cd, v1beta1.ComputeDomainConditionDegraded).Status == metav1.ConditionFalse
	})
}

func TestAKilledIMEXProcessIsReportedAndRestarted(t *testing.T) {
	cd := cdtest.MakeComputeDomain("train", "team-a").UID("0f1e2d3c-aaaa-bbbb-cccc-000000000002").Obj()
	c, ctrl, _ := startFakeController(t, cd, 3)
	ips := loopbackIPs(2)
	// A restart delay long enough that the exit is observed before the
	// new process runs.
	slowRestart := func(o *Options) { o.RestartDelay = 500 * time.Millisecond }
	n0 := startDaemon(t, c, ctrl, cd, "gb200-0", ips[0], "cluster-b.4", slowRestart)
	startDaemon(t, c, ctrl, cd, "gb200-1", ips[1], "cluster-b.4")
	waitForDomain(t, c, ctrl.key, "Ready with 2 nodes", func(cd *v1beta1.ComputeDomain) bool {
		return cd.Status.Status == v1beta1.ComputeDomainStatusReady && cd.Status.ReadyNodes == 2
	})

	// Kill node 0's IMEX (not the daemon): the daemon reports it, the domain
	// is Degraded naming the node, the supervisor restarts IMEX and the
	// domain recovers.
	sup := n0.daemon.Supervisor()
	sup.mu.Lock()
	proc := sup.proc
	sup.mu.Unlock()
	proc.Stop()
	waitForDomain(t, c, ctrl.key, "Degraded naming gb200-0's lost daemon", func(cd *v1beta1.ComputeDomain) bool {
		d := condition(cd, v1beta1.ComputeDomainConditionDegraded)
		return d.Status == metav1.ConditionTrue && d.Reason == v1beta1.ComputeDomainReasonDaemonLost && strings.Contains(d.Message, "node gb200-0 (IMEXReady=False IMEXNotRunning")
	})
	waitForDomain(t, c, ctrl.key, "Ready and not Degraded after the restart", func(cd *v1beta1.ComputeDomain) bool {
		return cd.Status.Status == v1beta1.ComputeDomainStatusReady && cd.Status.ReadyNodes == 2 &&
			condition(cd, v1beta1.ComputeDomainConditionDegraded).Status == metav1.ConditionFalse
	})
	if got := sup.Starts(); got != 2 {
		t.Errorf("IMEX started %d times, want 2", got)
	}
	var m v1beta1.IMEXNode
	if err := c.Get(context.Background(), n0.daemon.Record().Key(), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Kind != "Pod" || m.OwnerReferences[0].Name != "cd-daemon-gb200-0" {
		t.Errorf("IMEXNode owner references = %+v, want the daemon pod", m.OwnerReferences)
	}
}

var cmpSortStrings = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

func TestAPeerLostSoonAfterItConnectedIsReported(t *testing.T) {
	cd := cdtest.MakeComputeDomain("train", "team-a").UID("0f1e2d3c-aaaa-bbbb-cccc-000000000003").Obj()
	c, ctrl, ctx := startFakeController(t, cd, 5)
	ips := loopbackIPs(2)
	// A join grace longer than the test: only a peer that never connected
	// may use it.
	longGrace := func(o *Options) { o.JoinGrace = time.Hour }
	startDaemon(t, c, ctrl, cd, "gb200-0", ips[0], "cluster-c.1", longGrace)
	n1 := startDaemon(t, c, ctrl, cd, "gb200-1", ips[1], "cluster-c.1", longGrace)
	waitForDomain(t, c, ctrl.key, "Ready with 2 nodes", func(cd *v1beta1.ComputeDomain) bool {
		return cd.Status.Status == v1beta1.ComputeDomainStatusReady && cd.Status.ReadyNodes == 2
	})
	// The domain is Ready before the daemons learn of each other; wait until
	// node 0's IMEX is connected to node 1 and its daemon has probed since.
	prober := standin.NewCommandPortProber(ips[0])
	deadline := time.Now().Add(eventually)
	for {
		st, err := prober.Probe(ctx)
		if err == nil && st.Peers[ips[1]] == imex.PeerConnected {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 0's IMEX never connected to node 1: %+v, %v", st, err)
		}
		time.Sleep(poll)
	}
	time.Sleep(4 * 50 * time.Millisecond) // four of the daemons' probe intervals

	// Node 1's daemon goes away, its record still saying ready: node 0
	// reports the lost connection although node 1 joined moments ago.
	n1.stop()
	waitForDomain(t, c, ctrl.key, "Degraded naming gb200-1 as node 0's lost peer", func(cd *v1beta1.ComputeDomain) bool {
		d := condition(cd, v1beta1.ComputeDomainConditionDegraded)
		return d.Status == metav1.ConditionTrue && d.Reason == v1beta1.ComputeDomainReasonPeersLost &&
			strings.Contains(d.Message, "node gb200-0 (PeersConnected=False PeersNotConnected: not connected to 1 of 1 peers: gb200-1 ("+ips[1]+"))")
	})
}

func TestARestartedDaemonReportsTheRestartBeforeItIsReadyAgain(t *testing.T) {
	cd := cdtest.MakeComputeDomain("train", "team-a").UID("0f1e2d3c-aaaa-bbbb-cccc-000000000004").Obj()
	c, ctrl, ctx := startFakeController(t, cd, 6)
	ips := loopbackIPs(2)
	n0 := startDaemon(t, c, ctrl, cd, "gb200-0", ips[0], "cluster-d.1")
	startDaemon(t, c, ctrl, cd, "gb200-1", ips[1], "cluster-d.1")
	waitForDomain(t, c, ctrl.key, "Ready with 2 nodes", func(cd *v1beta1.ComputeDomain) bool {
		return cd.Status.Status == v1beta1.ComputeDomainStatusReady && cd.Status.ReadyNodes == 2
	})

	// Node 0's daemon exits and its container restarts at once (the same
	// pod, so the same record): its new IMEX is ready and connected within
	// a probe, yet the record says the restart, for one probe interval.
	n0.stop()
	holdFor := 400 * time.Millisecond
	restarted := startDaemon(t, c, ctrl, cd, "gb200-0", ips[0], "cluster-d.1", func(o *Options) { o.ProbeInterval = holdFor })
	waitForDomain(t, c, ctrl.key, "Degraded naming gb200-0's restart", func(cd *v1beta1.ComputeDomain) bool {
		d := condition(cd, v1beta1.ComputeDomainConditionDegraded)
		return d.Status == metav1.ConditionTrue && d.Reason == v1beta1.ComputeDomainReasonDaemonLost &&
			strings.Contains(d.Message, "node gb200-0 (IMEXReady=False IMEXRestarted: ")
	})
	waitForDomain(t, c, ctrl.key, "Ready and not Degraded after the restart", func(cd *v1beta1.ComputeDomain) bool {
		return cd.Status.Status == v1beta1.ComputeDomainStatusReady && cd.Status.ReadyNodes == 2 &&
			condition(cd, v1beta1.ComputeDomainConditionDegraded).Status == metav1.ConditionFalse
	})
	var after v1beta1.IMEXNode
	if err := c.Get(ctx, restarted.daemon.Record().Key(), &after); err != nil {
		t.Fatal(err)
	}
	if !after.Status.Ready {
		t.Errorf("restarted daemon's record is not ready: %+v", after.Status.Conditions)
	}
	if w := restarted.daemon.Record().Writes(); w != 3 {
		t.Errorf("restarted daemon made %d API writes, want 3 (spec, the restart, ready)", w)
	}
}

// silencingProber leaves probes unanswered on demand, as an IMEX process on
// a loaded node or a hung one does.
type silencingProber struct {
	imex.Prober
	mu       sync.Mutex
	skip     int  // the next probes to leave unanswered
	silent   bool // leave every probe unanswered
	answered int  // probes answered (the real prober's answer)
}

func (p *silencingProber) Probe(ctx context.Context) (imex.State, error) {
	p.mu.Lock()
	if p.silent || p.skip > 0 {
		if p.skip > 0 {
			p.skip--
		}
		p.mu.Unlock()
		return imex.State{}, fmt.Errorf("no answer: %w", context.DeadlineExceeded)
	}
	p.answered++
	p.mu.Unlock()
	return p.Prober.Probe(ctx)
}

func (p *silencingProber) set(f func(*silencingProber)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

func (p *silencingProber) get(f func(*silencingProber) bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return f(p)
}

// statusLog is a Record that keeps every status written.
type statusLog struct {
	Record
	mu      sync.Mutex
	written []v1beta1.IMEXNodeStatus
	at      []time.Time
}

func (r *statusLog) ApplyStatus(ctx context.Context, st v1beta1.IMEXNodeStatus) error {
	r.mu.Lock()
	r.written, r.at = append(r.written, st), append(r.at, time.Now())
	r.mu.Unlock()
	return r.Record.ApplyStatus(ctx, st)
}

func (r *statusLog) statuses() ([]v1beta1.IMEXNodeStatus, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]v1beta1.IMEXNodeStatus(nil), r.written...), append([]time.Time(nil), r.at...)
}

func TestUnansweredProbesReportNotReadyOnlyAfterTheFailureThreshold(t *testing.T) {
	cd := cdtest.MakeComputeDomain("train", "team-a").UID("0f1e2d3c-aaaa-bbbb-cccc-000000000005").Obj()
	c, ctrl, _ := startFakeController(t, cd, 7)
	ip := loopbackIPs(1)[0]
	const interval = 50 * time.Millisecond
	prober := &silencingProber{Prober: standin.NewCommandPortProber(ip)}
	var log *statusLog
	n := startDaemon(t, c, ctrl, cd, "gb200-0", ip, "cluster-e.1", func(o *Options) {
		o.Prober = prober
		log = &statusLog{Record: o.Record}
		o.Record = log
	})
	isReady := func(st []v1beta1.IMEXNodeStatus) bool { return len(st) > 0 && st[len(st)-1].Ready }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(eventually)
		for !cond() {
			if time.Now().After(deadline) {
				st, _ := log.statuses()
				t.Fatalf("timed out waiting until %s; statuses written: %+v", what, st)
			}
			time.Sleep(poll)
		}
	}
	waitFor("the node is reported ready", func() bool { st, _ := log.statuses(); return isReady(st) })
	written, _ := log.statuses()
	readyWrites := len(written)

	// Two probes in a row go unanswered, then the process answers again:
	// below the threshold of three, nothing is written.
	prober.set(func(p *silencingProber) { p.skip = DefaultProbeFailureThreshold - 1 })
	waitFor("the unanswered probes are past", func() bool { return prober.get(func(p *silencingProber) bool { return p.skip == 0 }) })
	var before int
	prober.get(func(p *silencingProber) bool { before = p.answered; return true })
	waitFor("the process answered four more probes", func() bool {
		return prober.get(func(p *silencingProber) bool { return p.answered >= before+4 })
	})
	if st, _ := log.statuses(); len(st) != readyWrites {
		t.Fatalf("%d unanswered probes wrote %d statuses, want none: %+v", DefaultProbeFailureThreshold-1, len(st)-readyWrites, st[readyWrites:])
	}

	// The process goes silent: after three unanswered probes over at least
	// two probe intervals, the node is reported not ready, and why.
	silentFrom := time.Now()
	prober.set(func(p *silencingProber) { p.silent = true })
	waitFor("the node is reported not ready", func() bool { st, _ := log.statuses(); return len(st) > readyWrites })
	st, at := log.statuses()
	notReady := st[readyWrites]
	if notReady.Ready {
		t.Fatalf("the write after silence is ready: %+v", notReady)
	}
	if c := meta.FindStatusCondition(notReady.Conditions, v1beta1.IMEXNodeConditionIMEXReady); c == nil ||
		c.Reason != ReasonIMEXNotReady || c.Message != "the IMEX process leaves its probes unanswered" {
		t.Errorf("IMEXReady condition = %+v, want IMEXNotReady saying the probes go unanswered", c)
	}
	if took := at[readyWrites].Sub(silentFrom); took < (DefaultProbeFailureThreshold-1)*interval {
		t.Errorf("reported not ready %v after the process went silent, want at least %v", took, (DefaultProbeFailureThreshold-1)*interval)
	}

	// It answers again: ready again.
	prober.set(func(p *silencingProber) { p.silent = false })
	waitFor("the node is reported ready again", func() bool { st, _ := log.statuses(); return isReady(st) })
	n.stop()
}
