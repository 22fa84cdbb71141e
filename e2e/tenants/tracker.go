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

package tenants

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
)

// Interval is one GPU allocation as the story measured it on the claim's node: from the first poll that found
// the GPU plugin's CDI spec of the claim (written while preparing it) to the first poll that found it gone
// (removed while unpreparing it). The node's ledger bills the same two events (prepared, unprepared), so each end
// is off by at most the time between two looks at the node, which a loaded machine stretches: NotBefore and
// LastSeen keep the other side of each end (the spec was absent at NotBefore and present at LastSeen), so that
// the true length is known to lie between MinSeconds and MaxSeconds. The kubelet's own checkpoint is not looked
// at: it holds a claim from before its prepare until after its unprepare.
type Interval struct {
	Team, Namespace, Job, Pod, Node, Claim, ClaimUID string
	Start, End                                       time.Time
	NotBefore, LastSeen                              time.Time
}

// MinSeconds is the least the spec can have existed: from the first look that found it to the last.
func (i Interval) MinSeconds() float64 { return max(0, i.LastSeen.Sub(i.Start).Seconds()) }

// MaxSeconds is the most the spec can have existed: from the last look that did not find it yet to the first
// that found it gone.
func (i Interval) MaxSeconds() float64 { return i.End.Sub(i.NotBefore).Seconds() }

// Seconds is the interval's length.
func (i Interval) Seconds() float64 { return i.End.Sub(i.Start).Seconds() }

// claimTracer lists the files of a node that still mention a claim, and where the node keeps what
// (simcluster.Cluster).
type claimTracer interface {
	ClaimTraces(node, claimUID string) ([]string, error)
	NodePaths(node string) (nodeagent.Paths, error)
}

// cdiSpecs are the CDI spec files among a claim's traces on a node.
func cdiSpecs(nodes claimTracer, node, claimUID string) (int, error) {
	paths, err := nodes.NodePaths(node)
	if err != nil {
		return 0, err
	}
	traces, err := nodes.ClaimTraces(node, claimUID)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range traces {
		if strings.HasPrefix(t, paths.CDI+string(filepath.Separator)) {
			n++
		}
	}
	return n, nil
}

// trackPoll is how often the tracker looks: each end of a measured interval is late by at most this much (plus
// the time one poll takes).
const trackPoll = 20 * time.Millisecond

// tracker measures the allocation intervals of the pods of watched Jobs, all at once, in one loop: the pods of a
// job that starts while another is being preempted are measured from their start, not from when a step got to
// them.
type tracker struct {
	client kubernetes.Interface
	nodes  claimTracer

	mu        sync.Mutex
	jobs      map[jobKey]string // job → its team
	intervals []*Interval
	byPod     map[string]*Interval
	running   map[string]bool // pods seen Running
	err       error
	// lastPoll is when the previous poll began: a pod not bound then was not prepared then.
	lastPoll time.Time
}

func newTracker(client kubernetes.Interface, nodes claimTracer) *tracker {
	return &tracker{client: client, nodes: nodes, jobs: map[jobKey]string{}, byPod: map[string]*Interval{}, running: map[string]bool{}, lastPoll: time.Now()}
}

// jobKey names a Job.
type jobKey struct{ ns, name string }

// watch adds a Job of team's namespace.
func (t *tracker) watch(ns, job, team string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.jobs[jobKey{ns, job}] = team
}

// run polls until ctx ends.
func (t *tracker) run(ctx context.Context) {
	tick := time.NewTicker(trackPoll)
	defer tick.Stop()
	for {
		if err := t.poll(ctx); err != nil && ctx.Err() == nil {
			t.mu.Lock()
			t.err = err
			t.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (t *tracker) poll(ctx context.Context) error {
	began := time.Now()
	defer func() {
		t.mu.Lock()
		t.lastPoll = began
		t.mu.Unlock()
	}()
	t.mu.Lock()
	jobs := make(map[jobKey]string, len(t.jobs))
	for k, v := range t.jobs {
		jobs[k] = v
	}
	t.mu.Unlock()
	for key, team := range jobs {
		ns, job := key.ns, key.name
		pods, err := t.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
		if err != nil {
			return fmt.Errorf("list pods of job %s/%s: %w", ns, job, err)
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				t.mu.Lock()
				t.running[ns+"/"+p.Name] = true
				t.mu.Unlock()
			}
			if p.Spec.NodeName == "" || t.seen(ns+"/"+p.Name) {
				continue
			}
			iv, err := t.claimOf(ctx, &p)
			if err != nil || iv == nil {
				return err
			}
			iv.Team, iv.Job = team, job
			t.mu.Lock()
			iv.NotBefore = t.lastPoll
			t.byPod[ns+"/"+p.Name] = iv
			t.intervals = append(t.intervals, iv)
			t.mu.Unlock()
		}
	}
	for _, iv := range t.unfinished() {
		// The look happens at some moment between before and after.
		before := time.Now()
		specs, err := cdiSpecs(t.nodes, iv.Node, iv.ClaimUID)
		if err != nil {
			return fmt.Errorf("claim %s/%s on %s: %w", iv.Namespace, iv.Claim, iv.Node, err)
		}
		after := time.Now()
		t.mu.Lock()
		switch {
		case iv.Start.IsZero() && specs == 0:
			iv.NotBefore = before
		case iv.Start.IsZero():
			iv.Start, iv.LastSeen = after, before
		case specs > 0:
			iv.LastSeen = before
		default:
			iv.End = after
		}
		t.mu.Unlock()
	}
	return nil
}

func (t *tracker) seen(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byPod[key] != nil
}

// unfinished are the intervals not yet prepared or not yet unprepared.
func (t *tracker) unfinished() []*Interval {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*Interval
	for _, iv := range t.intervals {
		if iv.End.IsZero() {
			out = append(out, iv)
		}
	}
	return out
}

// claimOf is the interval, not started yet, of a bound pod's one claim (generated from its Job's claim
// template); nil while the pod's status does not name the claim yet.
func (t *tracker) claimOf(ctx context.Context, p *corev1.Pod) (*Interval, error) {
	if len(p.Status.ResourceClaimStatuses) == 0 {
		return nil, nil
	}
	if len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
		return nil, fmt.Errorf("pod %s/%s: want one generated ResourceClaim, status has %+v", p.Namespace, p.Name, p.Status.ResourceClaimStatuses)
	}
	name := *p.Status.ResourceClaimStatuses[0].ResourceClaimName
	claim, err := t.client.ResourceV1().ResourceClaims(p.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("claim of pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return &Interval{Namespace: p.Namespace, Pod: p.Name, Node: p.Spec.NodeName, Claim: name, ClaimUID: string(claim.UID)}, nil
}

// job counts a job's claims prepared so far, how many of them are not unprepared yet, and how many of their pods
// were seen Running; it returns the tracker's error, if polling failed.
func (t *tracker) job(ns, job string) (prepared, open, running int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, iv := range t.intervals {
		if iv.Namespace == ns && iv.Job == job && !iv.Start.IsZero() {
			prepared++
			if iv.End.IsZero() {
				open++
			}
			if t.running[ns+"/"+iv.Pod] {
				running++
			}
		}
	}
	return prepared, open, running, t.err
}

// all is every measured interval (copies), prepared ones only.
func (t *tracker) all() []Interval {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Interval, 0, len(t.intervals))
	for _, iv := range t.intervals {
		if !iv.Start.IsZero() {
			out = append(out, *iv)
		}
	}
	return out
}
