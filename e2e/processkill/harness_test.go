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

package processkill

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	pluginwatcherapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/dra"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin/crashtest"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin/kubelettest"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
)

// cluster is the control plane every trial's node talks to, and the plugin binaries built with -tags
// crashtest.
var cluster struct {
	cp         *simcluster.ControlPlane
	client     kubernetes.Interface
	ctrl       client.Client
	kubeconfig string
	bins       string
	err        error
}

func TestMain(m *testing.M) {
	code := func() int {
		ctx := context.Background()
		dir, err := os.MkdirTemp("", "pk")
		if err != nil {
			cluster.err = err
			return m.Run()
		}
		defer func() { _ = os.RemoveAll(dir) }()
		if cluster.err = setUp(ctx, dir); cluster.cp != nil {
			defer cluster.cp.Stop()
		}
		return m.Run()
	}()
	os.Exit(code)
}

func setUp(ctx context.Context, dir string) error {
	root, err := simcluster.RepoRoot()
	if err != nil {
		return err
	}
	cluster.bins = filepath.Join(dir, "bin")
	// The plugins as a node runs them: their own binaries, with the crash hook compiled in.
	// The stand-in nvidia-cuda-mps-control: the GPU plugin's MPS control daemons are processes of their own,
	// which outlive a killed plugin as on a node.
	build := exec.CommandContext(ctx, "go", "build", "-tags", "crashtest", "-o", cluster.bins+"/",
		"./cmd/gpu-kubelet-plugin", "./cmd/compute-domain-kubelet-plugin", "./cmd/mps-control-standin")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the plugins with -tags crashtest: %w\n%s", err, out)
	}
	if cluster.cp, err = simcluster.StartControlPlane(ctx, simcluster.ControlPlaneConfig{Dir: filepath.Join(dir, "cp")}); err != nil {
		return err
	}
	cluster.client, cluster.kubeconfig = cluster.cp.Client(), cluster.cp.Kubeconfig()
	applier, err := simcluster.NewApplier(cluster.cp.RESTConfig())
	if err != nil {
		return err
	}
	crds, _ := filepath.Glob(filepath.Join(root, "charts/computedomain-operator/crds/*.yaml"))
	for _, f := range crds {
		if _, err := applier.CreateFromFile(ctx, "", f); err != nil {
			return fmt.Errorf("CRD %s: %w", f, err)
		}
	}
	ctrllog.SetLogger(klog.Background())
	scheme, err := kubescheme.New()
	if err != nil {
		return err
	}
	// Our CRDs speak JSON only; the admin config asks for protobuf.
	jsonConfig := cluster.cp.RESTConfig()
	jsonConfig.ContentType, jsonConfig.AcceptContentTypes = "application/json", "application/json"
	if cluster.ctrl, err = client.New(jsonConfig, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	for _, ns := range []string{"default", "nvidia-dra", "team-a", "team-b"} {
		if _, err := cluster.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
			return err
		}
	}
	// The CRDs are served once discovery lists them.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cluster.client.Discovery().ServerResourcesForGroupVersion("resource.nvidia.com/v1beta1")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the CRDs are not served: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kind is one kubelet plugin under the harness.
type kind interface {
	// binary is the plugin's command (under cluster.bins).
	binary() string
	// driver is its DRA driver name.
	driver() string
	// args are its flags on the node.
	args(n *node) []string
	// prepareNode sets up what the node needs before the plugin starts (host root, objects).
	prepareNode(ctx context.Context, t *testing.T, n *node, rng *rand.Rand)
	// claims are the trial's claims, each allocated on the node (runTrial creates them once the plugin has
	// published their devices).
	claims(ctx context.Context, t *testing.T, n *node) []*resourceapi.ResourceClaim
	// check checks the node with the plugin running (not armed): the claims of prepared are prepared
	// exactly once, nothing else is; swept says the plugin started since the last unprepare.
	check(ctx context.Context, t *testing.T, n *node, prepared []*resourceapi.ResourceClaim, trial string)
}

// node is one trial's node: its directories, the kubelet's DRA manager and the plugin process.
type node struct {
	name                                          string
	base, hostRoot, cdiRoot, reg, plugins, kstate string
	manager                                       *dra.Manager
	proc                                          *process
	kind                                          kind

	mu sync.Mutex
	// active are the pods the kubelet runs or starts: the DRA manager's reconcile loop unprepares the
	// claims of any other pod.
	active map[types.UID]*corev1.Pod
}

func (n *node) setActive(pod *corev1.Pod, active bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if active {
		n.active[pod.UID] = pod
	} else {
		delete(n.active, pod.UID)
	}
}

func (n *node) activePods() []*corev1.Pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range n.active {
		out = append(out, p)
	}
	return out
}

// dataDir is the plugin's data directory (checkpoint, usage ledger, IMEX configs).
func (n *node) dataDir() string { return filepath.Join(n.plugins, n.kind.driver()) }

// newNode makes the node's directories (short: unix socket paths are limited to 108 bytes), its Node object
// and a kubelet DRA manager watching its plugin registry, as on a node.
func newNode(ctx context.Context, t *testing.T, k kind, name string) *node {
	t.Helper()
	// The node's kubelet parts (DRA manager, plugin watcher) end with its trial, as a node's with the node.
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	base, err := os.MkdirTemp("", "pk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	n := &node{name: name, base: base, kind: k, hostRoot: filepath.Join(base, "h"), cdiRoot: filepath.Join(base, "c"),
		reg: filepath.Join(base, "r"), plugins: filepath.Join(base, "p"), kstate: filepath.Join(base, "k"), active: map[types.UID]*corev1.Pod{}}
	for _, d := range []string{n.cdiRoot, n.reg, n.plugins, n.kstate} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := cluster.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_ = cluster.client.CoreV1().Nodes().Delete(bg, name, metav1.DeleteOptions{})
		_ = cluster.client.ResourceV1().ResourceSlices().DeleteCollection(bg, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
	})
	logger := klog.FromContext(ctx)
	if n.manager, err = dra.NewManager(logger, cluster.client, n.kstate); err != nil {
		t.Fatal(err)
	}
	sources := kubeletconfig.NewSourcesReady(func(sets.Set[string]) bool { return true })
	if err := n.manager.Start(ctx, n.activePods, func(context.Context) (*corev1.Node, error) { return obj, nil }, sources); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.manager.Stop)
	go func() {
		if err := nodeagent.WatchPlugins(ctx, n.reg, pluginwatcherapi.DRAPlugin, n.manager.GetWatcherHandler()); err != nil {
			logger.Error(err, "Plugin registration stopped", "node", name)
		}
	}()
	return n
}

// podOf is the pod that uses claim, as the scheduler leaves it: on the node, the claim reserved for it.
func podOf(n *node, claim *resourceapi.ResourceClaim) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-" + claim.Name, Namespace: claim.Namespace, UID: types.UID("pod-" + string(claim.UID))},
		Spec: corev1.PodSpec{NodeName: n.name, ResourceClaims: []corev1.PodResourceClaim{{Name: "c", ResourceClaimName: ptr.To(claim.Name)}},
			Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "c"}}}}}},
	}
}

// createClaim writes claim with its allocation and its reservation for its pod.
func createClaim(ctx context.Context, t *testing.T, n *node, claim *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	t.Helper()
	status := claim.Status
	pod := podOf(n, claim)
	status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	claim = claim.DeepCopy()
	claim.UID, claim.Status = "", resourceapi.ResourceClaimStatus{}
	created, err := cluster.client.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = status
	created.Status.ReservedFor[0].UID = types.UID("pod-" + string(created.UID))
	if created, err = cluster.client.ResourceV1().ResourceClaims(claim.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cluster.client.ResourceV1().ResourceClaims(created.Namespace).Delete(context.Background(), created.Name, metav1.DeleteOptions{})
	})
	return created
}

// process is the plugin binary on the node, started again after each kill.
type process struct {
	n    *node
	t    *testing.T
	log  *os.File
	mu   sync.Mutex
	cmd  *exec.Cmd
	gen  int
	done chan struct{}
	// aim is a crash point the armed incarnations also die at (its first hit): one the trials' random kills
	// have not reached yet.
	aim string
	// timerKill says the harness killed the current incarnation.
	timerKill bool
	started   time.Time
	crashLog  string
}

// start runs a new incarnation that kills itself at its crashAt-th crash-point hit (0: never), or at the
// first hit of the aimed point if it is armed.
func (p *process) start(crashAt int) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	p.crashLog = filepath.Join(p.n.base, "crash."+strconv.Itoa(p.gen))
	cmd := exec.Command(filepath.Join(cluster.bins, p.n.kind.binary()), p.n.kind.args(p.n)...)
	aim := ""
	if crashAt > 0 {
		aim = p.aim
	}
	cmd.Env = append(os.Environ(), "CDO_CRASH_LOG="+p.crashLog, "CDO_CRASH_AT="+strconv.Itoa(crashAt), "CDO_CRASH_POINT="+aim)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	_, _ = fmt.Fprintf(p.log, "=== incarnation %d, CDO_CRASH_AT=%d, CDO_CRASH_POINT=%q\n", p.gen, crashAt, aim)
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start %s: %v", p.n.kind.binary(), err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.cmd, p.done, p.timerKill = cmd, done, false
}

// killAfter SIGKILLs the current incarnation after d, unless it ended before.
func (p *process) killAfter(d time.Duration) {
	p.mu.Lock()
	gen, done := p.gen, p.done
	p.mu.Unlock()
	go func() {
		select {
		case <-done:
		case <-time.After(d):
			p.mu.Lock()
			defer p.mu.Unlock()
			select {
			case <-done:
				return // it ended by itself meanwhile
			default:
			}
			if p.gen == gen {
				p.timerKill = true
				_ = p.cmd.Process.Signal(syscall.SIGKILL)
			}
		}
	}()
}

// stop kills the incarnation (if it runs) and waits for it.
func (p *process) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// diedWithin reports whether the incarnation has ended or ends within d.
func (p *process) diedWithin(d time.Duration) bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// death says how the ended incarnation died: "timer" or the crash point it killed itself at, and whether
// it was still starting (its registration socket not yet created). A process that ended any other way (it
// exited, or a signal the harness did not send) is an error.
func (p *process) death() (cause string, starting bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return "", false, fmt.Errorf("the plugin ended by itself: %s", p.cmd.ProcessState)
	}
	cause = "timer"
	if !p.timerKill {
		lines := readLines(p.crashLog)
		if len(lines) == 0 {
			return "", false, errors.New("the plugin was killed by a SIGKILL neither the harness nor a crash point sent")
		}
		cause = lines[len(lines)-1]
	}
	fi, statErr := os.Stat(filepath.Join(p.n.reg, p.n.kind.driver()+"-reg.sock"))
	starting = statErr != nil || fi.ModTime().Before(p.started)
	return cause, starting, nil
}

func readLines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		out = append(out, s.Text())
	}
	return out
}

// tally counts the kills of a run.
type tally struct {
	mu sync.Mutex
	// byCause counts kills by crash point, or "timer".
	byCause map[string]int
	// atStartup are kills before the incarnation registered; inRecovery kills of an incarnation started after
	// a kill, before the call it interrupted succeeded.
	atStartup, inRecovery, total, trials int
}

func (c *tally) add(cause string, starting, recovering bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byCause == nil {
		c.byCause = map[string]int{}
	}
	c.byCause[cause]++
	c.total++
	if starting {
		c.atStartup++
	}
	if recovering {
		c.inRecovery++
	}
}

func (c *tally) String() string {
	var causes []string
	for k := range c.byCause {
		causes = append(causes, k)
	}
	sort.Strings(causes)
	var parts []string
	for _, k := range causes {
		parts = append(parts, fmt.Sprintf("%s=%d", k, c.byCause[k]))
	}
	return fmt.Sprintf("%d SIGKILLs in %d trials (%d during start-up, %d while recovering from a kill); by cause: %s",
		c.total, c.trials, c.atStartup, c.inRecovery, strings.Join(parts, " "))
}

// errKilled is a call that ended with the plugin process.
var errKilled = errors.New("the plugin process was killed")

// maxKillsPerCall bounds the kills of one call and its recovery.
const maxKillsPerCall = 3

// call runs one kubelet call (prepare or unprepare of pod's claims) through the DRA manager. A plugin that
// is not (yet) registered or not listening is asked again, as the kubelet's next sync would; a call during
// which the process died returns errKilled.
func call(ctx context.Context, n *node, prepare bool, pod *corev1.Pod) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		if prepare {
			err = n.manager.PrepareResources(ctx, pod)
		} else {
			err = n.manager.UnprepareResources(ctx, pod)
		}
		if err == nil {
			return nil
		}
		msg := err.Error()
		// A plugin not registered (yet) answers nothing: it died before, or has not registered since its
		// start. Any other error may be the process dying under the call: its exit follows at once.
		wait := 300 * time.Millisecond
		if strings.Contains(msg, "not registered") {
			wait = 0
		}
		if n.proc.diedWithin(wait) {
			return errKilled
		}
		// Transient as the kubelet sees them: no plugin yet, no listener yet, or the connection to the dead
		// incarnation closed by the new one's registration under the call; its next sync tries again.
		transient := strings.Contains(msg, "not registered") || strings.Contains(msg, "Unavailable") ||
			strings.Contains(msg, "connection refused") || strings.Contains(msg, "no such file") ||
			strings.Contains(msg, "client connection is closing")
		if !transient || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scriptRounds is how many scripts one trial plays on its node: each round prepares every claim once and
// ends with all of them unprepared, so that the node's start and checks are paid once for several rounds.
const scriptRounds = 3

// step is a script's step, or the end of a round (round).
type step struct {
	crashtest.Step
	round bool
}

// rounds are scriptRounds random scripts (crashtest.Script), each followed by the unprepare of the claims
// it leaves prepared, but the last.
func rounds(rng *rand.Rand, n int) []step {
	var out []step
	for r := range scriptRounds {
		left := map[int]bool{}
		for _, s := range crashtest.Script(rng, n) {
			out = append(out, step{Step: s})
			left[s.Claim] = s.Prepare
		}
		if r == scriptRounds-1 {
			break
		}
		for _, i := range rng.Perm(n) {
			if left[i] {
				out = append(out, step{Step: crashtest.Step{Claim: i}})
			}
		}
		out = append(out, step{round: true})
	}
	return out
}

// runTrial plays one random script of prepares and unprepares through the kubelet's DRA manager against
// the plugin process, which dies by SIGKILL at a random crash point (CDO_CRASH_AT) or at a random moment
// (a timer), and again, with probability 1/2, while it restarts or recovers. After each kill the process is
// started again and the kubelet answers as it does: the same call again or, for a prepare with probability
// 1/2, the unprepare of a pod deleted meanwhile. The node is checked at the end with the script's claims
// prepared, and again after all of them are unprepared.
func runTrial(ctx context.Context, t *testing.T, rng *rand.Rand, k kind, maxHits int, trial int, kills *tally, aim string) {
	t.Helper()
	name := fmt.Sprintf("pk-%d-%d", trial, rng.IntN(1<<20))
	n := newNode(ctx, t, k, name)
	k.prepareNode(ctx, t, n, rng)
	logFile, err := os.Create(filepath.Join(n.base, "plugin.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	n.proc = &process{n: n, t: t, log: logFile, aim: aim}
	n.proc.start(0)
	// A failed trial stops here too: no plugin process outlives its test.
	t.Cleanup(n.proc.stop)
	claims := createClaims(ctx, t, n, k.claims(ctx, t, n))
	// The first incarnation armed: restart it with the kill drawn.
	n.proc.stop()
	n.proc.start(1 + rng.IntN(maxHits))
	pods := make([]*corev1.Pod, len(claims))
	for i, c := range claims {
		pods[i] = podOf(n, c)
	}
	failf := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("trial %d (node %s, plugin log %s): %s", trial, name, logFile.Name(), fmt.Sprintf(format, args...))
	}
	// restart starts the process again after its killed-th kill in one call: armed again with probability 1/2
	// (below the bound), at one of its next crash points (its start-up reconcile or the retried call) or by
	// a timer anywhere in its start-up.
	restart := func(killed int) {
		switch r := rng.IntN(4); {
		case killed >= maxKillsPerCall || r >= 2:
			n.proc.start(0)
		case r == 0:
			n.proc.start(1 + rng.IntN(3))
		default:
			n.proc.start(0)
			n.proc.killAfter(time.Duration(rng.IntN(400)) * time.Millisecond)
		}
	}
	prepared, abandoned := map[int]bool{}, map[int]bool{}
	for _, s := range rounds(rng, len(claims)) {
		if s.round {
			abandoned = map[int]bool{} // the deleted pods' replacements use the claims again
			continue
		}
		if abandoned[s.Claim] {
			continue
		}
		if s.Prepare {
			n.setActive(pods[s.Claim], true)
		}
		if rng.IntN(3) == 0 {
			n.proc.killAfter(time.Duration(rng.IntN(40)) * time.Millisecond)
		}
		err := call(ctx, n, s.Prepare, pods[s.Claim])
		for killed := 1; errors.Is(err, errKilled); killed++ {
			cause, starting, deathErr := n.proc.death()
			if deathErr != nil {
				failf("%v", deathErr)
			}
			kills.add(cause, starting, killed > 1)
			if killed > maxKillsPerCall {
				failf("%d kills in one call and its recovery", killed)
			}
			restart(killed)
			if killed == 1 && s.Prepare && rng.IntN(2) == 0 {
				abandoned[s.Claim] = true // the pod was deleted while its prepare failed
				n.setActive(pods[s.Claim], false)
				s.Step = crashtest.Step{Claim: s.Claim}
			}
			err = call(ctx, n, s.Prepare, pods[s.Claim])
		}
		if err != nil {
			failf("%s of claim %s: %v", map[bool]string{true: "prepare", false: "unprepare"}[s.Prepare], claims[s.Claim].Name, err)
		}
		if s.Prepare {
			prepared[s.Claim] = true
		} else {
			delete(prepared, s.Claim)
			n.setActive(pods[s.Claim], false)
		}
	}
	// Disarm: the checks are no part of the script.
	n.proc.stop()
	n.proc.start(0)
	var left []*resourceapi.ResourceClaim
	for i := range claims {
		if prepared[i] {
			left = append(left, claims[i])
		}
	}
	k.check(ctx, t, n, left, fmt.Sprintf("trial %d (node %s)", trial, name))
	for i := range claims {
		if prepared[i] {
			if err := call(ctx, n, false, pods[i]); err != nil {
				failf("final unprepare of %s: %v", claims[i].Name, err)
			}
			n.setActive(pods[i], false)
		}
	}
	n.proc.stop()
	n.proc.start(0)
	k.check(ctx, t, n, nil, fmt.Sprintf("trial %d (node %s) after unpreparing everything", trial, name))
	n.proc.stop()
	kills.mu.Lock()
	kills.trials++
	kills.mu.Unlock()
}

// harness runs trials of k until PROCESS_KILLS (default def) kills happened, every one of points was among
// their causes, and some hit a starting and a recovering process; CRASH_SEED replays a run.
func harness(t *testing.T, k kind, def, maxHits int, points []string) {
	if cluster.err != nil {
		t.Fatal(cluster.err)
	}
	want := def
	if s := os.Getenv("PROCESS_KILLS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("PROCESS_KILLS=%q: want a number", s)
		}
		want = v
	}
	_, rng := crashtest.Trials(t, 0)
	// The kubelet's own log lines at -v=1, in the test's output when it fails.
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(1)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	kills := &tally{}
	missing := func() []string {
		return slices.DeleteFunc(slices.Clone(points), func(p string) bool { return kills.byCause[p] > 0 })
	}
	covered := func() bool { return len(missing()) == 0 }
	// aimable are the missing crash points (a timer cannot be aimed at).
	aimable := func() []string { return slices.DeleteFunc(missing(), func(p string) bool { return p == "timer" }) }
	start := time.Now()
	for trial := 0; kills.total < want || !covered() || kills.atStartup == 0 || kills.inRecovery == 0; trial++ {
		if trial > 4*want {
			t.Fatalf("after %d trials: %s; want %d kills, each of %v, some at start-up and in recovery", trial, kills, want, points)
		}
		before := kills.total
		// Once the random kills are spent, a point they never reached (one that takes a rare script and
		// draw, such as a kill between an MPS daemon's start and its record) is aimed at directly.
		aim := ""
		if m := aimable(); kills.total >= want && len(m) > 0 {
			aim = m[rng.IntN(len(m))]
		}
		t.Run(strconv.Itoa(trial), func(t *testing.T) { runTrial(ctx, t, rng, k, maxHits, trial, kills, aim) })
		if t.Failed() {
			break
		}
		if kills.total/500 > before/500 {
			t.Logf("progress: %s in %s", kills, time.Since(start).Round(time.Second))
		}
	}
	t.Logf("%s in %s", kills, time.Since(start).Round(time.Second))
}

// prepareOverSocket asks the plugin to prepare claim again over its DRA socket, as the kubelet would for a
// claim it holds no record of: the plugin must answer from its own checkpoint.
func prepareOverSocket(ctx context.Context, t *testing.T, n *node, claim *resourceapi.ResourceClaim) *drapb.NodePrepareResourceResponse {
	t.Helper()
	sock := filepath.Join(n.dataDir(), "dra.sock")
	kubelettest.Eventually(t, "the plugin's DRA socket", func() bool { _, err := os.Stat(sock); return err == nil })
	dra := drapb.NewDRAPluginClient(kubelettest.Dial(t, sock))
	var resp *drapb.NodePrepareResourcesResponse
	kubelettest.Eventually(t, "an answer on the plugin's DRA socket", func() bool {
		var err error
		resp, err = dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: claim.Namespace, Name: claim.Name, Uid: string(claim.UID)}}})
		return err == nil
	})
	return resp.Claims[string(claim.UID)]
}

// checkRecordedAndSpecs loads the plugin's checkpoint and checks it and the node's CDI specs against the
// prepared claims (crashtest.CheckRecorded, crashtest.CheckSpecs).
func checkRecordedAndSpecs(t *testing.T, n *node, prepared []*resourceapi.ResourceClaim, trial string) checkpoint.Checkpoint {
	t.Helper()
	bootID, err := hostroot.New(n.hostRoot).BootID()
	if err != nil {
		t.Fatal(err)
	}
	cp, _, err := checkpoint.NewStore(filepath.Join(n.dataDir(), draplugin.CheckpointFile), bootID).Load()
	if err != nil {
		t.Fatalf("%s: checkpoint: %v", trial, err)
	}
	want := map[string]bool{}
	for _, c := range prepared {
		want[string(c.UID)] = true
	}
	crashtest.CheckRecorded(t, cp.Claims, want, trial)
	w, err := cdi.NewWriter(n.cdiRoot, n.kind.driver())
	if err != nil {
		t.Fatal(err)
	}
	specs, err := w.ClaimUIDs()
	if err != nil {
		t.Fatal(err)
	}
	crashtest.CheckSpecs(t, specs, want, trial)
	return cp
}

// createClaims writes the claims, allocated and reserved, once the plugin has published every device they
// name: a scheduler allocates nothing before.
func createClaims(ctx context.Context, t *testing.T, n *node, want []*resourceapi.ResourceClaim) []*resourceapi.ResourceClaim {
	t.Helper()
	names := map[string]bool{}
	for _, c := range want {
		for _, r := range c.Status.Allocation.Devices.Results {
			names[r.Device] = true
		}
	}
	kubelettest.Eventually(t, "the plugin's ResourceSlices with the claims' devices", func() bool {
		list, err := cluster.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.name})
		if err != nil {
			return false
		}
		found := 0
		for _, s := range list.Items {
			for _, d := range s.Spec.Devices {
				if names[d.Name] {
					found++
				}
			}
		}
		return found == len(names)
	})
	var out []*resourceapi.ResourceClaim
	for _, c := range want {
		out = append(out, createClaim(ctx, t, n, c))
	}
	return out
}
