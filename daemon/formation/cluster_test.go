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

package formation_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
	"github.com/computedomain-operator/computedomain-operator/daemon"
	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/computedomain/identity"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
	"github.com/computedomain-operator/computedomain-operator/internal/imex/standin"
	cdplugin "github.com/computedomain-operator/computedomain-operator/kubeletplugin/computedomain"
)

var (
	// specBase holds the current spec's directories; removed after its
	// daemons stopped (GinkgoT().TempDir() would go while they still run).
	specBase string
	// followers are the running followDaemonSet loops of the current spec.
	followers sync.WaitGroup
)

func specDir() string {
	GinkgoHelper()
	dir, err := os.MkdirTemp(specBase, "node")
	Expect(err).NotTo(HaveOccurred())
	return dir
}

// simNode is one GB200 tray: a Node object, a fake host root, its
// compute-domain plugin driver and the IMEX daemons the DaemonSet would run
// on it. Each daemon pod has its own address, as pods do: 127.a.(b+k).(i+1)
// for the k-th domain on the i-th node of a rack.
type simNode struct {
	name, clique string
	a, b, i      int
	cdiRoot      string
	driver       *cdplugin.Driver

	mu      sync.Mutex
	daemons map[types.UID]*runningDaemon
}

type runningDaemon struct {
	d      *daemon.Daemon
	cancel context.CancelFunc
	done   chan error
}

func (r *runningDaemon) stop() {
	r.cancel()
	Eventually(r.done).WithTimeout(formed).Should(Receive(BeNil()))
}

// newRack makes n nodes of one clique with addresses 127.a.b.1..n.
func newRack(ctx context.Context, prefix string, n int) []*simNode {
	GinkgoHelper()
	a, b := 10+rand.IntN(240), 1+rand.IntN(240)
	clique := fmt.Sprintf("%s.%d", uuid.NewUUID(), rand.IntN(1000))
	var nodes []*simNode
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		Expect(k8s.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		dir := specDir()
		root := filepath.Join(dir, "host")
		_, err := hostroot.Fake(root, hostroot.FakeSpec{NodeName: name, GPUs: 4})
		Expect(err).NotTo(HaveOccurred())
		bootID, err := hostroot.New(root).BootID()
		Expect(err).NotTo(HaveOccurred())
		node := &simNode{name: name, a: a, b: b, i: i, clique: clique, cdiRoot: filepath.Join(dir, "cdi"), daemons: map[types.UID]*runningDaemon{}}
		writer, err := cdi.NewWriter(node.cdiRoot, cdplugin.DefaultDriverName)
		Expect(err).NotTo(HaveOccurred())
		node.driver, err = cdplugin.NewDriver(ctx, cdplugin.Config{
			NodeName: name, CliqueID: clique, OperatorNamespace: operatorNamespace, HostRoot: root, DomainConfigRoot: filepath.Join(dir, "plugin", "domains"), ReadyWait: 200 * time.Millisecond,
		}, cdplugin.Deps{
			CDI:        writer,
			Checkpoint: checkpoint.NewStore(filepath.Join(dir, "plugin", "checkpoint.json"), bootID),
			Domains:    cdplugin.CachedDomains{Reader: domainCache},
		})
		Expect(err).NotTo(HaveOccurred())
		nodes = append(nodes, node)
	}
	return nodes
}

// followDaemonSet plays the DaemonSet controller and the kubelet for the
// domain's DaemonSet: a daemon runs on each node its pod template's required
// node affinity lists; when a node leaves the list, or the DaemonSet goes, the
// daemon pod goes and the garbage collector deletes its member record.
func followDaemonSet(ctx context.Context, cd *v1beta1.ComputeDomain, podSlot int, nodes []*simNode) {
	followers.Add(1)
	go func() {
		defer GinkgoRecover()
		defer followers.Done()
		for ctx.Err() == nil {
			listed, err := daemonSetNodes(ctx, cd)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				Fail(err.Error())
			}
			known := map[string]bool{}
			for _, n := range nodes {
				known[n.name] = true
				n.mu.Lock()
				running := n.daemons[cd.UID]
				n.mu.Unlock()
				switch {
				case listed[n.name] && running == nil:
					n.startDaemon(ctx, cd, n.podIP(podSlot))
				case !listed[n.name] && running != nil:
					n.stopDaemon(ctx, cd)
				}
			}
			for name := range listed {
				if !known[name] {
					Fail(fmt.Sprintf("DaemonSet %s places a daemon on node %s, where the story allocated no claim of domain %s", computedomain.DaemonSetName(cd.UID), name, cd.Name))
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(poll):
			}
		}
	}()
}

// daemonSetNodes returns the nodes the domain's DaemonSet places a daemon on,
// as the DaemonSet controller reads them: one required node affinity term per
// node, `metadata.name In [<node>]`. No DaemonSet places no daemon.
func daemonSetNodes(ctx context.Context, cd *v1beta1.ComputeDomain) (map[string]bool, error) {
	key := client.ObjectKey{Namespace: operatorNamespace, Name: computedomain.DaemonSetName(cd.UID)}
	var ds appsv1.DaemonSet
	if err := k8s.Get(ctx, key, &ds); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get DaemonSet %s: %w", key, err)
	}
	aff := ds.Spec.Template.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil, fmt.Errorf("DaemonSet %s: spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution is unset", key)
	}
	nodes := map[string]bool{}
	for i, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(term.MatchExpressions) != 0 || len(term.MatchFields) != 1 {
			return nil, fmt.Errorf("DaemonSet %s: node selector term %d is not one matchFields requirement: %+v", key, i, term)
		}
		req := term.MatchFields[0]
		if req.Key != "metadata.name" || req.Operator != corev1.NodeSelectorOpIn || len(req.Values) != 1 {
			return nil, fmt.Errorf("DaemonSet %s: node selector term %d is not `metadata.name In [<node>]`: %+v", key, i, req)
		}
		nodes[req.Values[0]] = true
	}
	return nodes, nil
}

// podIP is the address of the node's daemon pod of the domain in slot k.
func (n *simNode) podIP(k int) string { return fmt.Sprintf("127.%d.%d.%d", n.a, n.b+k, n.i+1) }

func (n *simNode) startDaemon(ctx context.Context, cd *v1beta1.ComputeDomain, ip string) {
	GinkgoHelper()
	watch := daemon.NewDomainWatch(k8s, client.ObjectKeyFromObject(cd), cd.UID)
	d, err := daemon.New(daemon.Options{
		Identity:      identity.Identity{DomainUID: string(cd.UID), DomainName: cd.Name, DomainNamespace: cd.Namespace, CliqueID: n.clique, ConfigDir: specDir()},
		NodeName:      n.name,
		IPAddress:     ip,
		Pod:           n.runDaemonPod(ctx, cd, ip),
		Client:        k8s,
		Domain:        watch.Get,
		DomainChanged: watch.Changed(),
		DomainSynced:  watch.Synced,
		Starter:       standin.InProcessStarter{},
		Prober:        standin.NewCommandPortProber(ip),
		ProbeInterval: 100 * time.Millisecond,
	})
	Expect(err).NotTo(HaveOccurred())
	dctx, cancel := context.WithCancel(ctx)
	r := &runningDaemon{d: d, cancel: cancel, done: make(chan error, 1)}
	go watch.Run(dctx)
	go func() { r.done <- d.Run(dctx) }()
	n.mu.Lock()
	n.daemons[cd.UID] = r
	n.mu.Unlock()
}

// runDaemonPod creates the daemon's Pod as the DaemonSet controller and the kubelet would leave it: in the
// operator namespace, labeled and annotated with its domain, bound to the node, with its address. The
// controller trusts a member record only through the daemon pod that owns it.
func (n *simNode) runDaemonPod(ctx context.Context, cd *v1beta1.ComputeDomain, ip string) daemon.PodRef {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: operatorNamespace,
			Name:      "cd-daemon-" + string(cd.UID)[:8] + "-" + n.name,
			Labels:    map[string]string{computedomain.AppLabelKey: computedomain.DaemonAppLabelValue, v1beta1.ComputeDomainLabelKey: string(cd.UID)},
			Annotations: map[string]string{
				computedomain.DomainNamespaceAnnotation: cd.Namespace, computedomain.DomainNameAnnotation: cd.Name,
			},
		},
		Spec: corev1.PodSpec{
			NodeName:                     n.name,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "daemon", Image: "daemon:test"}},
		},
	}
	// A daemon that starts again on the node comes in a new pod.
	Expect(client.IgnoreNotFound(k8s.Delete(ctx, pod.DeepCopy(), client.GracePeriodSeconds(0)))).To(Succeed())
	Eventually(func() error { return k8s.Create(ctx, pod) }).WithTimeout(formed).WithPolling(poll).Should(Succeed())
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	return daemon.PodRef{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID}
}

func (n *simNode) stopDaemon(ctx context.Context, cd *v1beta1.ComputeDomain) {
	GinkgoHelper()
	n.mu.Lock()
	r := n.daemons[cd.UID]
	delete(n.daemons, cd.UID)
	n.mu.Unlock()
	if r == nil {
		return
	}
	r.stop()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "cd-daemon-" + string(cd.UID)[:8] + "-" + n.name}}
	if err := k8s.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
		Fail(err.Error())
	}
	m := &v1beta1.ComputeDomainMember{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: r.d.Record().Key().Name}}
	if err := k8s.Delete(ctx, m); err != nil && !apierrors.IsNotFound(err) {
		Fail(err.Error())
	}
}

func (n *simNode) daemon(uid types.UID) *runningDaemon {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.daemons[uid]
}

func (n *simNode) stopAll() {
	n.mu.Lock()
	var all []*runningDaemon
	for _, r := range n.daemons {
		all = append(all, r)
	}
	n.daemons = map[types.UID]*runningDaemon{}
	n.mu.Unlock()
	for _, r := range all {
		r.stop()
	}
}

// workloadClaim is a pod's claim from the domain's claim template, created
// as the ResourceClaim controller creates it (labels and annotations from the
// template's spec.metadata) and allocated on node n as the scheduler does: a
// channel slot, the template's config, a node selector for n, reserved for
// the pod. It returns the claim as the API server has it.
func workloadClaim(ctx context.Context, cd *v1beta1.ComputeDomain, n *simNode, pod string, slot int) *resourcev1.ResourceClaim {
	GinkgoHelper()
	var rct resourcev1.ResourceClaimTemplate
	Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: cd.Namespace, Name: cd.Spec.Channel.ResourceClaimTemplate.Name}, &rct)
	}).WithTimeout(formed).WithPolling(poll).Should(Succeed(), "the controller creates the workload claim template")
	Expect(rct.Spec.ObjectMeta.Labels).To(HaveKeyWithValue(v1beta1.WorkloadClaimLabelKey, string(cd.UID)),
		"the workload claim template labels its claims with the domain")
	claim := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cd.Namespace, Name: pod + "-channel",
			Labels: rct.Spec.Labels, Annotations: rct.Spec.Annotations,
		},
		Spec: rct.Spec.Spec,
	}
	Expect(k8s.Create(ctx, claim)).To(Succeed(), "create claim %s", claim.Name)
	claim.Status.Allocation = &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
			Request: rct.Spec.Spec.Devices.Requests[0].Name, Driver: cdplugin.DefaultDriverName, Pool: n.name, Device: cdplugin.ChannelDeviceName(slot),
		}}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n.name}}},
		}}},
	}
	for _, c := range rct.Spec.Spec.Devices.Config {
		claim.Status.Allocation.Devices.Config = append(claim.Status.Allocation.Devices.Config, resourcev1.DeviceAllocationConfiguration{
			Source: resourcev1.AllocationConfigSourceClaim, Requests: c.Requests, DeviceConfiguration: c.DeviceConfiguration,
		})
	}
	claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod, UID: uuid.NewUUID()}}
	Expect(k8s.Status().Update(ctx, claim)).To(Succeed(), "allocate claim %s on %s", claim.Name, n.name)
	return claim
}

// endJob ends the claim's pod: the kubelet unprepares the claim, and the
// ResourceClaim controller removes the pod's reservation.
func endJob(ctx context.Context, n *simNode, claim *resourcev1.ResourceClaim) {
	GinkgoHelper()
	unprepareClaim(ctx, n, claim)
	done := claim.DeepCopy()
	done.Status.ReservedFor = nil
	Expect(k8s.Status().Patch(ctx, done, client.MergeFrom(claim))).To(Succeed(), "release claim %s", claim.Name)
}

// prepareUntilReady calls prepare as the kubelet does, again after every
// retryable error, and returns the container's view of the prepared claim.
func prepareUntilReady(ctx context.Context, n *simNode, claim *resourcev1.ResourceClaim) cdi.ContainerView {
	GinkgoHelper()
	var res kubeletplugin.PrepareResult
	Eventually(func() error {
		out, err := n.driver.PrepareResourceClaims(ctx, []*resourcev1.ResourceClaim{claim})
		if err != nil {
			return err
		}
		res = out[claim.UID]
		return res.Err
	}).WithTimeout(formed).WithPolling(poll).Should(Succeed(), "prepare of %s on %s", claim.Name, n.name)
	var ids []string
	for _, d := range res.Devices {
		ids = append(ids, d.CDIDeviceIDs...)
	}
	view, err := cdi.Resolve(n.cdiRoot, ids...)
	Expect(err).NotTo(HaveOccurred())
	return view
}

func unprepareClaim(ctx context.Context, n *simNode, claim *resourcev1.ResourceClaim) {
	GinkgoHelper()
	out, err := n.driver.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{NamespacedName: types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}, UID: claim.UID}})
	Expect(err).NotTo(HaveOccurred())
	Expect(out[claim.UID]).To(Succeed())
}

func createDomain(ctx context.Context, name, ns string) *v1beta1.ComputeDomain {
	GinkgoHelper()
	cd := &v1beta1.ComputeDomain{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta1.ComputeDomainSpec{Channel: v1beta1.ComputeDomainChannelSpec{
			ResourceClaimTemplate: v1beta1.ComputeDomainResourceClaimTemplate{Name: name + "-channel"},
		}},
	}
	Expect(k8s.Create(ctx, cd)).To(Succeed())
	return cd
}

func getDomain(g Gomega, ctx context.Context, cd *v1beta1.ComputeDomain) *v1beta1.ComputeDomain {
	var got v1beta1.ComputeDomain
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cd), &got)).To(Succeed())
	return &got
}
