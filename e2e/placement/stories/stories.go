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

// Package stories holds the gang placement stories of issue 14 and their helpers, so that two test binaries run
// them on their own simulated clusters of 4 GB200 NVL72 racks × 18 trays: e2e/placement with the Workload API
// (pods join their domain's PodGroup) and e2e/noworkloadapi without it (the controller's clique placement
// fallback). Both install the chart's webhook with webhook.podGroups and run an unmodified NVIDIA-style
// manifest (UnmodifiedJob: no affinity, no PodGroup field).
package stories

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:staticcheck // Ginkgo's DSL, as in the suites
	. "github.com/onsi/gomega"    //nolint:staticcheck // Gomega's DSL, as in the suites
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/topology"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
)

// Named timeouts of the stories.
const (
	// ClusterStartTimeout covers starting 72 simulated GB200 trays with the operator.
	ClusterStartTimeout = 3 * time.Minute
	podStartTimeout     = time.Minute
	jobTimeout          = 2 * time.Minute
	// gangBindTimeout covers placing a whole gang and binding it.
	gangBindTimeout = time.Minute
	// gangHeldTime is how long a gang that cannot be placed is watched staying unbound.
	gangHeldTime = 3 * time.Second
)

// Racks and TraysPerRack are the acceptance topology of issue 14: 4 NVL72 racks of 18 trays.
const (
	Racks        = 4
	TraysPerRack = 18
)

// Fixtures: both name their domain gang-domain and label their pods app.kubernetes.io/name=gang-job.
const (
	// GangJob names the domain's PodGroup in its pods (spec.schedulingGroup.podGroupName).
	GangJob = "demo/computedomain-gang-job.yaml"
	// UnmodifiedJob is an NVIDIA-style ComputeDomain job: no affinity, no PodGroup field; only the webhook
	// places it whole, in one clique.
	UnmodifiedJob = "demo/computedomain-unmodified-job.yaml"
)

// Mode is how a cluster places a domain's gang, and what its domain then says.
type Mode struct {
	// Name names the mode in the specs.
	Name string
	// Placed is the PlacementGuaranteed status and reason of a domain whose pods were placed in one clique.
	Placed       metav1.ConditionStatus
	PlacedReason string
	// NoRackMessage is in the Ready condition's message (GangUnschedulable) while no rack can hold a 16-node gang.
	NoRackMessage string
	// SlicedReason is the PlacementGuaranteed reason of a domain placed in slices; NoRacksMessage is in the Ready
	// message while only 3 racks have room for the 4 slices of 16 of a 64-node job.
	SlicedReason   string
	NoRacksMessage string
}

// WorkloadAPI is the Workload API's gang: a PodGroup per domain, with a topology constraint on the clique.
var WorkloadAPI = Mode{
	Name: "Workload API on", Placed: metav1.ConditionTrue, PlacedReason: cdv1beta1.ComputeDomainReasonCliqueGang,
	NoRackMessage: "no NVLink clique for the gang of 16 pods",
	SlicedReason:  cdv1beta1.ComputeDomainReasonSliceGang, NoRacksMessage: "need 4 NVLink cliques with 16 free nodes each, found 3",
}

// CliqueFallback is the controller's clique placement without the Workload API.
var CliqueFallback = Mode{
	Name: "Workload API off: clique placement fallback", Placed: metav1.ConditionFalse, PlacedReason: cdv1beta1.ComputeDomainReasonCliqueAffinity,
	NoRackMessage: "no NVLink clique has 16 free nodes",
	SlicedReason:  cdv1beta1.ComputeDomainReasonSliceAffinity, NoRacksMessage: "need 4 NVLink cliques with 16 free nodes each, found 3",
}

// Cluster is a stories' simulated cluster and its clients.
type Cluster struct {
	Sim      *simcluster.Cluster
	Client   kubernetes.Interface
	CRClient client.Client
	Applier  *simcluster.Applier
	RepoRoot string
}

// Start starts the 4 × 18 cluster with ComputeDomains and the chart's webhook with webhook.podGroups; cfg
// adds to that configuration (DisableWorkloadAPI, say).
func Start(ctx context.Context, cfg simcluster.Config) (*Cluster, error) {
	root, err := simcluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	cfg.Topology = topology.Topology{Profile: "gb200-nvl72", Racks: Racks, NodesPerRack: TraysPerRack}
	cfg.RunDuration = 2 * time.Second
	cfg.ComputeDomains = true
	values := map[string]any{}
	for k, v := range cfg.ChartValues {
		values[k] = v
	}
	values["webhook"] = map[string]any{"enabled": true, "podGroups": true}
	cfg.ChartValues = values
	sim, err := simcluster.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Sim: sim, Client: sim.Client(), RepoRoot: root}
	scheme, err := kubescheme.New()
	if err == nil {
		// Our kinds have no protobuf encoding (the simulated cluster's admin configuration asks for protobuf).
		crConfig := rest.CopyConfig(sim.RESTConfig())
		crConfig.ContentType = runtime.ContentTypeJSON
		c.CRClient, err = client.New(crConfig, client.Options{Scheme: scheme})
	}
	if err == nil {
		c.Applier, err = simcluster.NewApplier(sim.RESTConfig())
	}
	if err != nil {
		sim.Stop()
		return nil, err
	}
	return c, nil
}

// StartInBeforeSuite declares the suite's BeforeSuite: it starts the cluster (Start with cfg, described as
// what) into *pc and stops it after the suite. A suite run against E2E_KUBECONFIG is skipped: it needs a
// simulated cluster of its own shape.
func StartInBeforeSuite(pc **Cluster, what string, cfg simcluster.Config) bool {
	return BeforeSuite(func(ctx SpecContext) {
		if os.Getenv("E2E_KUBECONFIG") != "" {
			Skip("this suite starts its own simulated cluster (" + what + "); it does not run against E2E_KUBECONFIG")
		}
		By("starting a simulated cluster of 4 GB200 NVL72 racks × 18 trays with ComputeDomains and the pod-group webhook, " + what)
		startCtx, cancel := context.WithTimeout(ctx, ClusterStartTimeout)
		defer cancel()
		c, err := Start(startCtx, cfg)
		Expect(err).NotTo(HaveOccurred())
		*pc = c
		DeferCleanup(c.Sim.Stop)
	}, NodeTimeout(ClusterStartTimeout+30*time.Second))
}

// PlacementStories declares the stories of issue 14's acceptance for the cluster *pc (set by the suite's
// BeforeSuite) placing as mode says, each job from fixtures[0]; the first story runs once per fixture.
func PlacementStories(pc **Cluster, mode Mode, fixtures ...string) bool {
	fixture := fixtures[0]
	return Describe(fmt.Sprintf("ComputeDomain jobs placed whole inside one NVLink clique (4 racks × 18 GB200 trays, %s, %s)", mode.Name, fixture), Ordered, func() {
		// busy holds the pods that keep a tray's GPUs in use.
		var busy string
		var c *Cluster

		BeforeAll(func(ctx SpecContext) {
			c = *pc
			By("keeping 2 trays busy in rack 0 and 3 in every other rack: only rack 0 has 16 free trays")
			busy = c.Namespace(ctx)
			for r := range Racks {
				first := TraysPerRack - 3
				if r == 0 {
					first = TraysPerRack - 2
				}
				for n := first; n < TraysPerRack; n++ {
					c.OccupyTray(ctx, busy, Tray(r, n))
				}
			}
			c.WaitRunning(ctx, busy, 2+3*(Racks-1))
			// The racks are free again for the suite's other stories, whichever runs next.
			DeferCleanup(func(ctx SpecContext) { c.DeleteNamespace(ctx, busy) })
		})

		DescribeTable("lands a 16-node job entirely in the one rack with 16 free trays, where its domain forms", func(ctx SpecContext, fixture string) {
			ns := c.Namespace(ctx)
			c.CreateGangJob(ctx, ns, fixture, 16)
			cliques := c.BoundCliques(ctx, ns, 16)
			Expect(cliques).To(Equal(map[string]int{c.RackClique(0): 16}), "every pod in rack 0")

			By("the domain becomes Ready as one IMEX ensemble in that clique, and says how it was placed")
			Eventually(ctx, func(g Gomega) {
				cd := c.Domain(g, ctx, ns)
				g.Expect(meta.IsStatusConditionTrue(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionReady)).To(BeTrue(), "Ready: %+v", cd.Status.Conditions)
				g.Expect(cd.Status.Cliques).To(HaveLen(1))
				g.Expect(cd.Status.Cliques[0].CliqueID).To(Equal(c.RackClique(0)))
				placement := meta.FindStatusCondition(cd.Status.Conditions, cdv1beta1.ComputeDomainConditionPlacementGuaranteed)
				g.Expect(placement).NotTo(BeNil())
				g.Expect(placement.Status).To(Equal(mode.Placed))
				g.Expect(placement.Reason).To(Equal(mode.PlacedReason), placement.Message)
			}).WithTimeout(jobTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
			c.WaitJobDone(ctx, ns)

			By("the finished pods' claims: how many Kubernetes 1.37.2 makes again (pods of a PodGroup), and none once the Job's ttlSecondsAfterFinished let the pods go (docs/install.md)")
			made, err := simcluster.ClaimsMadeWithin(ctx, c.Client, ns, 3*time.Second)
			Expect(err).NotTo(HaveOccurred())
			AddReportEntry("claims made again for the 16 finished pods in 3 s", made)
			c.DeleteFinishedPods(ctx, ns)
			made, err = simcluster.ClaimsMadeWithin(ctx, c.Client, ns, 3*time.Second)
			Expect(err).NotTo(HaveOccurred())
			Expect(made).To(BeZero(), "claims made after the finished pods were deleted")
		}, fixtureEntries(fixtures))

		It("binds no pod of a 16-node job while no rack has 16 free trays, and the domain says why", func(ctx SpecContext) {
			By("taking one more tray of rack 0: every rack has 15 free trays")
			c.OccupyTray(ctx, busy, Tray(0, TraysPerRack-3))
			c.WaitRunning(ctx, busy, 3*Racks)

			ns := c.Namespace(ctx)
			c.CreateGangJob(ctx, ns, fixture, 16)
			Eventually(ctx, func(g Gomega) {
				ready := meta.FindStatusCondition(c.Domain(g, ctx, ns).Status.Conditions, cdv1beta1.ComputeDomainConditionReady)
				g.Expect(ready).NotTo(BeNil())
				g.Expect(ready.Reason).To(Equal(cdv1beta1.ComputeDomainReasonGangUnschedulable))
				g.Expect(ready.Message).To(ContainSubstring(mode.NoRackMessage))
			}).WithTimeout(gangBindTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
			Consistently(ctx, func(g Gomega) {
				g.Expect(c.Bound(g, ctx, ns)).To(BeEmpty(), "no pod of the gang binds")
			}).WithTimeout(gangHeldTime).WithPolling(200 * time.Millisecond).Should(Succeed())
			// A gang that waits keeps the scheduler and the Job controller busy with its pods: gone before the
			// next spec.
			c.DeleteNamespace(ctx, ns)
		})

		It("places two 10-node jobs submitted together in two different racks, each whole", func(ctx SpecContext) {
			// Every rack has 15 free trays (the spec before): no rack holds both.
			a, b := c.Namespace(ctx), c.Namespace(ctx)
			// Pods run 2 s here: a job placed while the other's pods are ending may take the same rack once
			// enough of its trays are free, which is right; the pods in one rack must never outnumber its 15
			// free trays, whatever the timing: the watch sees every binding and every end in order.
			holdings := c.WatchHoldings(ctx, a, b)
			c.CreateGangJob(ctx, a, fixture, 10)
			c.CreateGangJob(ctx, b, fixture, 10)
			inA, inB := c.BoundCliques(ctx, a, 10), c.BoundCliques(ctx, b, 10)
			Expect(inA).To(HaveLen(1), "job A in one rack")
			Expect(inB).To(HaveLen(1), "job B in one rack")
			c.WaitJobDone(ctx, a)
			c.WaitJobDone(ctx, b)
			holdings.Stop()
			Expect(holdings.Overfilled(15)).To(BeEmpty(), "more pods in one rack than its free trays\n%s", holdings)
			AddReportEntry("placement", fmt.Sprintf("the two jobs ran at once: %t, in racks %v and %v", holdings.RanAtOnce(), keys(inA), keys(inB)))
			c.DeleteFinishedPods(ctx, a, b)
		})

		It("refuses an 80-node domain whose 5 slices of 16 the 4 racks cannot hold: no pod binds, and the domain says why", func(ctx SpecContext) {
			ns := c.Namespace(ctx)
			c.CreateGangJob(ctx, ns, fixture, 80)
			Eventually(ctx, func(g Gomega) {
				cond := meta.FindStatusCondition(c.Domain(g, ctx, ns).Status.Conditions, cdv1beta1.ComputeDomainConditionPlacementGuaranteed)
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(cond.Reason).To(Equal(cdv1beta1.ComputeDomainReasonExceedsClique))
				g.Expect(cond.Message).To(ContainSubstring("room for only 4 of its slices of 16"))
			}).WithTimeout(gangBindTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
			Consistently(ctx, func(g Gomega) {
				g.Expect(c.Bound(g, ctx, ns)).To(BeEmpty(), "no pod of the refused gang binds")
			}).WithTimeout(gangHeldTime).WithPolling(200 * time.Millisecond).Should(Succeed())
			c.DeleteNamespace(ctx, ns)
		})

		It("runs three 10-node jobs racing for two racks without a deadlock: the third waits whole for a rack", func(ctx SpecContext) {
			By("filling racks 2 and 3: only racks 0 and 1 have free trays, 15 each")
			for r := 2; r < Racks; r++ {
				for n := range TraysPerRack - 3 {
					c.OccupyTray(ctx, busy, Tray(r, n))
				}
			}
			c.WaitRunning(ctx, busy, Racks*TraysPerRack-2*15)

			jobs := []string{c.Namespace(ctx), c.Namespace(ctx), c.Namespace(ctx)}
			holdings := c.WatchHoldings(ctx, jobs...)
			for _, ns := range jobs {
				c.CreateGangJob(ctx, ns, fixture, 10)
			}
			// Every job completes, each inside one rack; three cannot run at once on two racks of 15, so the one
			// placed last waited, with no pod bound, while the other two held both racks, and then ran in a rack
			// as a whole once it had 10 free trays (the job there may still have had pods ending: a rack never
			// held more pods than its 15 free trays).
			used := map[string]int{}
			for _, ns := range jobs {
				c.WaitJobDone(ctx, ns)
				cliques := c.BoundCliques(ctx, ns, 10)
				Expect(cliques).To(HaveLen(1), "job %s in one rack: %v", ns, cliques)
				for cl := range cliques {
					used[cl]++
				}
			}
			holdings.Stop()
			Expect(keys(used)).To(ConsistOf(c.RackClique(0), c.RackClique(1)), "the three jobs ran in the two racks with free trays")
			Expect(holdings.Overfilled(15)).To(BeEmpty(), "more pods in one rack than its free trays\n%s", holdings)
			third := holdings.LastPlaced()
			Expect(holdings.WaitedWhole(third, 2)).To(BeTrue(), "job %s, placed last, waited with no pod bound while the other two held both racks\n%s", third, holdings)
			c.DeleteFinishedPods(ctx, jobs...)
		})
	})
}

func fixtureEntries(fixtures []string) []TableEntry {
	entries := make([]TableEntry, 0, len(fixtures))
	for _, f := range fixtures {
		entries = append(entries, Entry(f, f))
	}
	return entries
}

// Tray is the name of tray n of rack r.
func Tray(r, n int) string { return fmt.Sprintf("gb200-r%d-n%02d", r, n) }

// RackClique is the NVLink clique of rack r.
func (c *Cluster) RackClique(r int) string {
	for _, n := range c.Sim.Nodes() {
		if n.Rack == r {
			return n.CliqueID
		}
	}
	Fail(fmt.Sprintf("no rack %d", r))
	return ""
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Namespace creates a namespace for one spec.
func (c *Cluster) Namespace(ctx context.Context) string {
	GinkgoHelper()
	ns, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gang-"}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return ns.Name
}

// OccupyTray runs a pod holding one GPU of the tray (demo/gpu-claim.yaml, pinned to the node), so a 4-GPU
// pod no longer fits there.
func (c *Cluster) OccupyTray(ctx context.Context, ns, node string) {
	GinkgoHelper()
	objs := c.Fixture("demo/gpu-claim.yaml")
	Expect(objs).To(HaveLen(2))
	pod := objs[1]
	pod.SetName("busy-" + node)
	Expect(unstructured.SetNestedStringMap(pod.Object, map[string]string{"kubernetes.io/hostname": node}, "spec", "nodeSelector")).To(Succeed())
	_, err := c.Applier.Create(ctx, ns, objs)
	Expect(err).NotTo(HaveOccurred())
}

// WaitRunning waits until n pods of ns run.
func (c *Cluster) WaitRunning(ctx context.Context, ns string, n int) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		g.Expect(running).To(Equal(n))
	}).WithTimeout(podStartTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// CreateGangJob creates fixture in ns, resized to nodes (spec.numNodes, and the Job's parallelism and
// completions): the domain first, the Job once the controller has looked at the domain (its PodGroup made,
// or refused). Pods created before their PodGroup exists are held, as they should be, but the ResourceClaim
// controller then retries them with backoff ("get PodGroup for Pod: not found"), which delayed the scheduler's
// first look at the gang by 10-25 s in this simulator (docs/design/computedomains.md).
func (c *Cluster) CreateGangJob(ctx context.Context, ns, fixture string, nodes int64) {
	GinkgoHelper()
	c.CreateJob(ctx, ns, fixture, JobOptions{Nodes: nodes})
}

// JobOptions resize a fixture's job for CreateJob.
type JobOptions struct {
	// Nodes is spec.numNodes and the Job's parallelism and completions.
	Nodes int64
	// RunFor is how long each pod runs on its simulated node (default: the cluster's RunDuration).
	RunFor time.Duration
	// BackoffLimit is the Job's (default: the fixture's).
	BackoffLimit int64
}

// CreateJob is CreateGangJob with more of the job chosen.
func (c *Cluster) CreateJob(ctx context.Context, ns, fixture string, o JobOptions) {
	GinkgoHelper()
	nodes := o.Nodes
	var job, rest []*unstructured.Unstructured
	for _, obj := range c.Fixture(fixture) {
		switch obj.GetKind() {
		case "ComputeDomain":
			Expect(unstructured.SetNestedField(obj.Object, nodes, "spec", "numNodes")).To(Succeed())
		case "Job":
			Expect(unstructured.SetNestedField(obj.Object, nodes, "spec", "parallelism")).To(Succeed())
			Expect(unstructured.SetNestedField(obj.Object, nodes, "spec", "completions")).To(Succeed())
			if o.BackoffLimit > 0 {
				Expect(unstructured.SetNestedField(obj.Object, o.BackoffLimit, "spec", "backoffLimit")).To(Succeed())
			}
			if o.RunFor > 0 {
				Expect(unstructured.SetNestedStringMap(obj.Object, map[string]string{nodeagent.RunDurationAnnotation: o.RunFor.String()},
					"spec", "template", "metadata", "annotations")).To(Succeed())
			}
		}
		if obj.GetKind() == "Job" {
			job = append(job, obj)
		} else {
			rest = append(rest, obj)
		}
	}
	_, err := c.Applier.Create(ctx, ns, rest)
	Expect(err).NotTo(HaveOccurred())
	Eventually(ctx, func(g Gomega) {
		cond := meta.FindStatusCondition(c.Domain(g, ctx, ns).Status.Conditions, cdv1beta1.ComputeDomainConditionPlacementGuaranteed)
		g.Expect(cond).NotTo(BeNil())
	}).WithTimeout(gangBindTimeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	_, err = c.Applier.Create(ctx, ns, job)
	Expect(err).NotTo(HaveOccurred())
}

// DeleteFinishedPods lets the finished gang job of each namespace go with its pods and claims (the Job's
// ttlSecondsAfterFinished), so that Kubernetes 1.37.2 stops making their claims again (see
// simcluster.ClaimsHoldingDevices) and the next specs run without that load.
func (c *Cluster) DeleteFinishedPods(ctx context.Context, namespaces ...string) {
	GinkgoHelper()
	for _, ns := range namespaces {
		Expect(simcluster.DeleteFinishedPods(ctx, c.Client, ns, "gang-job", jobTimeout)).To(Succeed())
	}
}

// DeleteNamespace deletes ns and waits until its pods are gone.
func (c *Cluster) DeleteNamespace(ctx context.Context, ns string) {
	GinkgoHelper()
	Expect(c.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})).To(Succeed())
	Eventually(ctx, func(g Gomega) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods.Items).To(BeEmpty())
	}).WithTimeout(jobTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// Domain reads the gang job's domain.
func (c *Cluster) Domain(g Gomega, ctx context.Context, ns string) *cdv1beta1.ComputeDomain {
	cd := &cdv1beta1.ComputeDomain{}
	g.Expect(c.CRClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gang-domain"}, cd)).To(Succeed())
	return cd
}

// Bound maps the bound pods of the gang job in ns to their nodes.
func (c *Cluster) Bound(g Gomega, ctx context.Context, ns string) map[string]string {
	pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=gang-job"})
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			out[p.Name] = p.Spec.NodeName
		}
	}
	return out
}

// BoundCliques waits until n pods of the gang job in ns are bound and counts them per NVLink clique.
func (c *Cluster) BoundCliques(ctx context.Context, ns string, n int) map[string]int {
	GinkgoHelper()
	var bound map[string]string
	Eventually(ctx, func(g Gomega) {
		bound = c.Bound(g, ctx, ns)
		g.Expect(bound).To(HaveLen(n))
	}).WithTimeout(gangBindTimeout).WithPolling(100*time.Millisecond).Should(Succeed(), func() string { return simcluster.PodsSummary(ctx, c.Client, ns) })
	cliques := map[string]int{}
	nodes := map[string]string{}
	for _, spec := range c.Sim.Nodes() {
		nodes[spec.Name] = spec.CliqueID
	}
	for _, node := range bound {
		cliques[nodes[node]]++
	}
	return cliques
}

// WaitJobDone waits until the gang job in ns completed and none of its claims holds a device, so its trays are
// free (see simcluster.ClaimsHoldingDevices for why not until its claims are gone).
func (c *Cluster) WaitJobDone(ctx context.Context, ns string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		job, err := c.Client.BatchV1().Jobs(ns).Get(ctx, "gang-job", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(job.Status.Succeeded).To(Equal(*job.Spec.Completions), func() string { return fmt.Sprintf("job status %+v", job.Status) })
		claims, err := simcluster.ClaimsHoldingDevices(ctx, c.Client, ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(claims).To(BeEmpty(), func() string { return "claims holding devices: " + c.claimsSummary(ctx, claims) })
		// The domain and the pods are listed once, when the wait fails, not on every poll the job is still running.
	}).WithTimeout(jobTimeout).WithPolling(100*time.Millisecond).Should(Succeed(), func() string {
		return c.domainSummary(ctx, ns) + "\n" + simcluster.PodsSummary(ctx, c.Client, ns)
	})
}

// claimsSummary describes claims for failure messages: each one's finalizers, deletion, allocation, consumers
// and the phase of the pod it was made for.
func (c *Cluster) claimsSummary(ctx context.Context, claims []resourcev1.ResourceClaim) string {
	parts := make([]string, 0, len(claims))
	for _, cl := range claims {
		part := fmt.Sprintf("%s: finalizers %v, allocated %t, reserved for %d", cl.Name, cl.Finalizers, cl.Status.Allocation != nil, len(cl.Status.ReservedFor))
		for _, r := range cl.Status.ReservedFor {
			part += fmt.Sprintf(" %s/%s", r.Resource, r.Name)
		}
		if cl.DeletionTimestamp != nil {
			part += ", deleted at " + cl.DeletionTimestamp.UTC().Format("15:04:05")
		}
		for _, o := range cl.OwnerReferences {
			if o.Kind != "Pod" {
				continue
			}
			pod, err := c.Client.CoreV1().Pods(cl.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
			switch {
			case err != nil:
				part += fmt.Sprintf(", pod %s: %v", o.Name, err)
			case pod.UID != o.UID:
				part += fmt.Sprintf(", pod %s replaced", o.Name)
			default:
				part += fmt.Sprintf(", pod %s %s on %q", o.Name, pod.Status.Phase, pod.Spec.NodeName)
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// domainSummary describes the gang job's domain in ns for failure messages: its conditions and nodes.
func (c *Cluster) domainSummary(ctx context.Context, ns string) string {
	cd := &cdv1beta1.ComputeDomain{}
	if err := c.CRClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gang-domain"}, cd); err != nil {
		return "domain: " + err.Error()
	}
	parts := make([]string, 0, len(cd.Status.Conditions))
	for _, cond := range cd.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message))
	}
	return fmt.Sprintf("domain %s/%s: %d nodes in status; %s", ns, cd.Name, len(cd.Status.Nodes), strings.Join(parts, "; "))
}

// Fixture reads a demo manifest.
func (c *Cluster) Fixture(manifest string) []*unstructured.Unstructured {
	GinkgoHelper()
	data, err := os.ReadFile(c.RepoRoot + "/" + manifest)
	Expect(err).NotTo(HaveOccurred())
	objs, err := simcluster.DecodeManifests(data)
	Expect(err).NotTo(HaveOccurred())
	return objs
}
