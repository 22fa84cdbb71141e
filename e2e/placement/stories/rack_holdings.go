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

package stories

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2" //nolint:staticcheck // Ginkgo's DSL, as in the suites
	. "github.com/onsi/gomega"    //nolint:staticcheck // Gomega's DSL, as in the suites
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	watchtools "k8s.io/client-go/tools/watch"
)

// gangJobSelector selects the pods of the fixtures' gang jobs.
const gangJobSelector = "app.kubernetes.io/name=gang-job"

// Holdings is what a watch of the gang jobs' pods saw, change by change, in the API server's order: after every
// change, which NVLink cliques each job's pods held and how many of its pods waited unbound. A pod holds its
// node's clique from its binding until it ends (Succeeded, Failed or deleted). Judging "at the same time" on
// this sequence, not on polls or on the pods' start and finish times, makes the checks independent of timing.
type Holdings struct {
	cliqueOf map[string]string // node → clique
	jobs     []string          // the jobs' namespaces

	mu    sync.Mutex
	pods  map[types.UID]podState
	steps []holdingStep
	err   error

	cancel context.CancelFunc
	done   chan struct{}
}

// podState is what a pod contributes to a step.
type podState struct {
	ns     string
	clique string // "" while unbound
	ended  bool
}

// holdingStep is the jobs' state after one change.
type holdingStep struct {
	// held are the cliques each job's running pods hold, with how many pods.
	held map[string]map[string]int
	// waiting are each job's pods that exist unbound.
	waiting map[string]int
}

// WatchHoldings starts watching the gang jobs' pods of the namespaces jobs; Stop ends it.
func (c *Cluster) WatchHoldings(ctx context.Context, jobs ...string) *Holdings {
	GinkgoHelper()
	h := &Holdings{cliqueOf: map[string]string{}, jobs: jobs, pods: map[types.UID]podState{}, done: make(chan struct{})}
	for _, n := range c.Sim.Nodes() {
		h.cliqueOf[n.Name] = n.CliqueID
	}
	list, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: gangJobSelector})
	Expect(err).NotTo(HaveOccurred())
	for i := range list.Items {
		h.observe(watch.Added, &list.Items[i])
	}
	ctx, h.cancel = context.WithCancel(ctx)
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, podWatcher{client: c.Client})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer close(h.done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				switch ev.Type {
				case watch.Added, watch.Modified, watch.Deleted:
					if pod, ok := ev.Object.(*corev1.Pod); ok {
						h.observe(ev.Type, pod)
					}
				case watch.Error:
					h.mu.Lock()
					h.err = fmt.Errorf("watch of the gang jobs' pods: %v", ev.Object)
					h.mu.Unlock()
					return
				}
			}
		}
	}()
	return h
}

// podWatcher watches the gang jobs' pods of every namespace.
type podWatcher struct{ client kubernetes.Interface }

func (w podWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.LabelSelector = gangJobSelector
	return w.client.CoreV1().Pods("").Watch(ctx, opts)
}

// observe records one change of a pod and the step it makes.
func (h *Holdings) observe(t watch.EventType, pod *corev1.Pod) {
	if !slices.Contains(h.jobs, pod.Namespace) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if t == watch.Deleted {
		delete(h.pods, pod.UID)
	} else {
		h.pods[pod.UID] = podState{
			ns:     pod.Namespace,
			clique: h.cliqueOf[pod.Spec.NodeName],
			ended:  pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.DeletionTimestamp != nil,
		}
	}
	step := holdingStep{held: map[string]map[string]int{}, waiting: map[string]int{}}
	for _, p := range h.pods {
		switch {
		case p.ended:
		case p.clique == "":
			step.waiting[p.ns]++
		default:
			if step.held[p.ns] == nil {
				step.held[p.ns] = map[string]int{}
			}
			step.held[p.ns][p.clique]++
		}
	}
	h.steps = append(h.steps, step)
}

// Stop ends the watch and fails the spec if the watch broke.
func (h *Holdings) Stop() {
	GinkgoHelper()
	h.cancel()
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	Expect(h.err).NotTo(HaveOccurred())
}

// SharedCliques describes every step at which pods of two jobs held the same clique.
func (h *Holdings) SharedCliques() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for i, s := range h.steps {
		for a, ja := range h.jobs {
			for _, jb := range h.jobs[a+1:] {
				for clique := range s.held[ja] {
					if n, ok := s.held[jb][clique]; ok {
						out = append(out, fmt.Sprintf("change %d: %s (%d pods) and %s (%d pods) both in clique %s", i, ja, s.held[ja][clique], jb, n, clique))
					}
				}
			}
		}
	}
	return out
}

// Overfilled describes every step at which the pods of the jobs held more trays of one clique between them than
// the clique had free (trays): the placement is wrong then, whatever the timing. Two jobs in one clique at once
// are not: a job whose pods are ending frees trays for the next one before its last pod ends.
func (h *Holdings) Overfilled(trays int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for i, s := range h.steps {
		in := map[string]int{}
		for _, cliques := range s.held {
			for clique, n := range cliques {
				in[clique] += n
			}
		}
		for clique, n := range in {
			if n > trays {
				out = append(out, fmt.Sprintf("change %d: %d pods in clique %s, which has %d free trays", i, n, clique, trays))
			}
		}
	}
	return out
}

// RanAtOnce tells whether pods of every job held cliques at one step.
func (h *Holdings) RanAtOnce() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.steps {
		if len(s.held) == len(h.jobs) {
			return true
		}
	}
	return false
}

// LastPlaced is the job whose first pod was bound last.
func (h *Holdings) LastPlaced() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := map[string]int{}
	for i, s := range h.steps {
		for ns := range s.held {
			if _, ok := first[ns]; !ok {
				first[ns] = i
			}
		}
	}
	last := ""
	for _, ns := range h.jobs {
		if i, ok := first[ns]; ok && (last == "" || i > first[last]) {
			last = ns
		}
	}
	return last
}

// WaitedWhole tells whether job ns waited with every one of its pods unbound while the other jobs held n
// distinct cliques between them (the racks with free trays), and bound none of them until then.
func (h *Holdings) WaitedWhole(ns string, n int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.steps {
		if len(s.held[ns]) > 0 {
			return false
		}
		others := map[string]bool{}
		for job, cliques := range s.held {
			if job != ns {
				for clique := range cliques {
					others[clique] = true
				}
			}
		}
		if s.waiting[ns] > 0 && len(others) >= n {
			return true
		}
	}
	return false
}

// String lists the steps at which what the jobs held changed, for failure messages.
func (h *Holdings) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	prev := ""
	for i, s := range h.steps {
		var parts []string
		for _, ns := range h.jobs {
			parts = append(parts, fmt.Sprintf("%s held %v waiting %d", ns, s.held[ns], s.waiting[ns]))
		}
		line := strings.Join(parts, "; ")
		if line != prev {
			fmt.Fprintf(&b, "change %d: %s\n", i, line)
			prev = line
		}
	}
	return b.String()
}
