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

package gpu

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml/mock"
)

func TestCliqueLabelFollowsTheFabric(t *testing.T) {
	e := newTestNodeEnv(t, "gb200-nvl72", withFabric())
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{"team": "a"}}})
	d := e.mustDriver(func(_ *Config, deps *Deps) { deps.Labeler = NodeLabeler{Client: client, NodeName: testNode} })
	ctx := testContext(t)

	labels := func() map[string]string {
		n, err := client.CoreV1().Nodes().Get(ctx, testNode, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Labels
	}
	cliques := func() map[string]bool {
		out := map[string]bool{}
		for _, dev := range allDevices(d.Resources()) {
			c, _ := strAttr(dev, attrCliqueID)
			out[c] = true
		}
		return out
	}
	first := fmt.Sprintf("%s.%d", testClusterUUID, testClique)
	second := fmt.Sprintf("%s.%d", testClusterUUID, 9)

	steps := []struct {
		name        string
		do          func() error
		wantLabels  map[string]string
		wantCliques map[string]bool
	}{
		{
			name:        "start-up sets the label",
			do:          func() error { return d.SyncCliqueLabel(ctx) },
			wantLabels:  map[string]string{"team": "a", CliqueLabel: first},
			wantCliques: map[string]bool{first: true},
		},
		{
			name: "the rack moves to another clique",
			do: func() error {
				for i := range 4 {
					if err := e.lib.SetCliqueID(i, ptr.To(uint32(9))); err != nil {
						return err
					}
				}
				return d.RefreshClique(ctx)
			},
			wantLabels:  map[string]string{"team": "a", CliqueLabel: second},
			wantCliques: map[string]bool{second: true},
		},
		{
			name: "one GPU's fabric restarts: no clique until it settles",
			do: func() error {
				if err := e.lib.SetFabricState(2, mock.FabricInProgress); err != nil {
					return err
				}
				return d.RefreshClique(ctx)
			},
			wantLabels:  map[string]string{"team": "a"},
			wantCliques: map[string]bool{"": true},
		},
		{
			name: "the fabric completes again",
			do: func() error {
				if err := e.lib.SetFabricState(2, mock.FabricCompleted); err != nil {
					return err
				}
				return d.RefreshClique(ctx)
			},
			wantLabels:  map[string]string{"team": "a", CliqueLabel: second},
			wantCliques: map[string]bool{second: true},
		},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if diff := cmp.Diff(s.wantLabels, labels()); diff != "" {
			t.Errorf("%s: labels (-want +got):\n%s", s.name, diff)
		}
		if diff := cmp.Diff(s.wantCliques, cliques()); diff != "" {
			t.Errorf("%s: device cliques (-want +got):\n%s", s.name, diff)
		}
	}
}

// flakyLabeler fails its first writes, then keeps the label.
type flakyLabeler struct {
	mu       sync.Mutex
	failures int
	tries    int
	label    *string
}

func (l *flakyLabeler) SetNodeClique(_ context.Context, clique string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tries++
	if l.failures > 0 {
		l.failures--
		return errors.New("the API server is unavailable")
	}
	l.label = &clique
	return nil
}

func (l *flakyLabeler) written() (*string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.label, l.tries
}

func TestAFailedCliqueLabelWriteIsRetriedUntilItSucceeds(t *testing.T) {
	e := newTestNodeEnv(t, "gb200-nvl72", withFabric())
	labeler := &flakyLabeler{failures: 3}
	d := e.mustDriver(func(_ *Config, deps *Deps) { deps.Labeler = labeler })
	ctx, cancel := context.WithCancel(testContext(t))
	if err := d.SyncCliqueLabel(ctx); err == nil {
		t.Fatal("the first write succeeded")
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		d.Run(ctx)
	}()
	defer func() {
		cancel()
		<-stopped
	}()
	want := fmt.Sprintf("%s.%d", testClusterUUID, testClique)
	deadline := time.Now().Add(10 * time.Second)
	for {
		label, tries := labeler.written()
		if label != nil {
			if *label != want || tries != 4 {
				t.Errorf("label %q after %d writes, want %q after 4 (three failed)", *label, tries, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the label was never written; %d writes tried", tries)
		}
		e.clock.Step(time.Second) // the back-off waits 1 s, 2 s, 4 s
		time.Sleep(time.Millisecond)
	}
}
