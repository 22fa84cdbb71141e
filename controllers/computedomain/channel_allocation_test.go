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

package computedomain

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

const (
	rackA = "cluster-1.0"
	rackB = "cluster-1.1"
)

func ref(name string) DomainRef {
	return DomainRef{UID: types.UID("uid-" + name), Name: types.NamespacedName{Namespace: "ns", Name: name}}
}

// step is one allocator operation; for assign, want is the channel and wantErr the error expected.
type step struct {
	assign       string // domain name to assign in clique
	clique       string
	release      string // domain name to release by UID
	releaseNamed string // domain name to release by namespace/name
	want         int32
	wantErr      error
}

func TestChannelAllocator(t *testing.T) {
	cases := map[string]struct {
		maxChannels int32
		steps       []step
		wantHeld    map[string]map[string]int32
	}{
		"the first domain in a clique gets channel 1, never 0": {
			steps:    []step{{assign: "a", clique: rackA, want: 1}},
			wantHeld: map[string]map[string]int32{"a": {rackA: 1}},
		},
		"two domains in one clique get different channels": {
			steps: []step{
				{assign: "a", clique: rackA, want: 1},
				{assign: "b", clique: rackA, want: 2},
			},
			wantHeld: map[string]map[string]int32{"a": {rackA: 1}, "b": {rackA: 2}},
		},
		"domains in different cliques may share a channel number": {
			steps: []step{
				{assign: "a", clique: rackA, want: 1},
				{assign: "b", clique: rackB, want: 1},
			},
			wantHeld: map[string]map[string]int32{"a": {rackA: 1}, "b": {rackB: 1}},
		},
		"a domain keeps its channel when asked again": {
			steps: []step{
				{assign: "a", clique: rackA, want: 1},
				{assign: "b", clique: rackA, want: 2},
				{assign: "a", clique: rackA, want: 1},
			},
			wantHeld: map[string]map[string]int32{"a": {rackA: 1}, "b": {rackA: 2}},
		},
		"a domain spanning two cliques holds one channel in each": {
			steps: []step{
				{assign: "b", clique: rackB, want: 1},
				{assign: "a", clique: rackA, want: 1},
				{assign: "a", clique: rackB, want: 2},
			},
			wantHeld: map[string]map[string]int32{"a": {rackA: 1, rackB: 2}, "b": {rackB: 1}},
		},
		"deleting a domain releases its channel and the next domain takes the lowest free one": {
			steps: []step{
				{assign: "a", clique: rackA, want: 1},
				{assign: "b", clique: rackA, want: 2},
				{release: "a"},
				{assign: "c", clique: rackA, want: 1},
				{assign: "d", clique: rackA, want: 3},
			},
			wantHeld: map[string]map[string]int32{"b": {rackA: 2}, "c": {rackA: 1}, "d": {rackA: 3}},
		},
		"a domain gone without its finalizer is released by name": {
			steps: []step{
				{assign: "a", clique: rackA, want: 1},
				{releaseNamed: "a"},
				{assign: "b", clique: rackA, want: 1},
			},
			wantHeld: map[string]map[string]int32{"b": {rackA: 1}},
		},
		"a full clique refuses a new domain but other cliques still allocate": {
			maxChannels: 3,
			steps: []step{
				{assign: "a", clique: rackA, want: 1},
				{assign: "b", clique: rackA, want: 2},
				{assign: "c", clique: rackA, wantErr: ErrChannelsExhausted},
				{assign: "c", clique: rackB, want: 1},
			},
			wantHeld: map[string]map[string]int32{"a": {rackA: 1}, "b": {rackA: 2}, "c": {rackB: 1}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			maxChannels := tc.maxChannels
			if maxChannels == 0 {
				maxChannels = DefaultMaxChannels
			}
			a := NewChannelAllocator(maxChannels)
			for i, s := range tc.steps {
				switch {
				case s.assign != "":
					got, err := a.Assign(ref(s.assign), s.clique)
					if !errors.Is(err, s.wantErr) {
						t.Fatalf("step %d: assign %s in %s: error %v, want %v", i, s.assign, s.clique, err, s.wantErr)
					}
					if got != s.want {
						t.Errorf("step %d: assign %s in %s = %d, want %d", i, s.assign, s.clique, got, s.want)
					}
				case s.release != "":
					a.Release(ref(s.release).UID)
				case s.releaseNamed != "":
					a.ReleaseNamed(ref(s.releaseNamed).Name)
				}
			}
			if diff := cmp.Diff(tc.wantHeld, held(a, tc.steps)); diff != "" {
				t.Errorf("channels held (-want +got):\n%s", diff)
			}
		})
	}
}

// held returns the channels of every domain the steps named, leaving out domains that hold none.
func held(a *ChannelAllocator, steps []step) map[string]map[string]int32 {
	out := map[string]map[string]int32{}
	for _, s := range steps {
		for _, name := range []string{s.assign, s.release, s.releaseNamed} {
			if name == "" {
				continue
			}
			if ch := a.Channels(ref(name).UID); len(ch) > 0 {
				out[name] = ch
			}
		}
	}
	return out
}

func domainWithChannels(name string, created time.Time, channels map[string]int32) v1beta1.ComputeDomain {
	w := utiltesting.MakeComputeDomain(name, "ns").UID(ref(name).UID)
	for clique, ch := range channels {
		w.Clique(v1beta1.ComputeDomainClique{CliqueID: clique, Channel: ptr.To(ch)})
	}
	cd := *w.Obj()
	cd.CreationTimestamp = metav1.NewTime(created)
	return cd
}

func TestChannelAllocatorRebuild(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		domains       []v1beta1.ComputeDomain
		after         []step
		wantHeld      map[string]map[string]int32
		wantConflicts int
	}{
		"after a restart every domain keeps the channels its status lists and new domains avoid them": {
			domains: []v1beta1.ComputeDomain{
				domainWithChannels("a", t0, map[string]int32{rackA: 1, rackB: 4}),
				domainWithChannels("b", t0.Add(time.Second), map[string]int32{rackA: 2}),
			},
			after: []step{
				{assign: "a", clique: rackA, want: 1},
				{assign: "c", clique: rackA, want: 3},
				{assign: "c", clique: rackB, want: 1},
			},
			wantHeld: map[string]map[string]int32{"a": {rackA: 1, rackB: 4}, "b": {rackA: 2}, "c": {rackA: 3, rackB: 1}},
		},
		"two statuses claiming one channel in a clique: the older domain keeps it, the younger gets a new one": {
			domains: []v1beta1.ComputeDomain{
				domainWithChannels("young", t0.Add(time.Minute), map[string]int32{rackA: 1}),
				domainWithChannels("old", t0, map[string]int32{rackA: 1}),
			},
			after: []step{
				{assign: "young", clique: rackA, want: 2},
			},
			wantHeld:      map[string]map[string]int32{"old": {rackA: 1}, "young": {rackA: 2}},
			wantConflicts: 1,
		},
		"a channel outside the allocator's range is not restored": {
			domains: []v1beta1.ComputeDomain{
				domainWithChannels("a", t0, map[string]int32{rackA: 0}),
			},
			after:         []step{{assign: "a", clique: rackA, want: 1}},
			wantHeld:      map[string]map[string]int32{"a": {rackA: 1}},
			wantConflicts: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := NewChannelAllocator(DefaultMaxChannels)
			conflicts, err := a.RebuildOnce(func() ([]v1beta1.ComputeDomain, error) { return tc.domains, nil })
			if err != nil {
				t.Fatalf("rebuild: %v", err)
			}
			if len(conflicts) != tc.wantConflicts {
				t.Errorf("conflicts = %v, want %d", conflicts, tc.wantConflicts)
			}
			// A second rebuild must not run again (it would double-restore).
			if _, err := a.RebuildOnce(func() ([]v1beta1.ComputeDomain, error) {
				t.Fatal("rebuild listed domains a second time")
				return nil, nil
			}); err != nil {
				t.Fatalf("second rebuild: %v", err)
			}
			for i, s := range tc.after {
				got, err := a.Assign(ref(s.assign), s.clique)
				if err != nil || got != s.want {
					t.Errorf("step %d: assign %s in %s = %d, %v; want %d", i, s.assign, s.clique, got, err, s.want)
				}
			}
			steps := append([]step{}, tc.after...)
			for _, d := range tc.domains {
				steps = append(steps, step{assign: d.Name})
			}
			if diff := cmp.Diff(tc.wantHeld, held(a, steps)); diff != "" {
				t.Errorf("channels held (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReleaseExceptGivesBackOnlyTheCliquesLeft(t *testing.T) {
	a := NewChannelAllocator(8)
	if _, err := a.RebuildOnce(func() ([]v1beta1.ComputeDomain, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	d := DomainRef{UID: "d", Name: types.NamespacedName{Namespace: "ns", Name: "d"}}
	other := DomainRef{UID: "o", Name: types.NamespacedName{Namespace: "ns", Name: "o"}}
	for _, c := range []string{"c1", "c2", "c3"} {
		if _, err := a.Assign(d, c); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.ReleaseExcept("d", map[string]bool{"c1": true}); !slices.Equal(got, []string{"c2", "c3"}) {
		t.Errorf("released %v, want c2 and c3", got)
	}
	if got := a.Channels("d"); len(got) != 1 || got["c1"] != FirstChannel {
		t.Errorf("channels after the release %v, want c1's alone", got)
	}
	// The channel given back in c2 is the next domain's there; c1's stays the domain's.
	if ch, _ := a.Assign(other, "c2"); ch != FirstChannel {
		t.Errorf("another domain got channel %d in c2, want the freed %d", ch, FirstChannel)
	}
	if ch, _ := a.Assign(other, "c1"); ch == FirstChannel {
		t.Errorf("another domain got channel %d in c1, which the domain still holds", ch)
	}
	if got := a.ReleaseExcept("unknown", nil); got != nil {
		t.Errorf("an unknown domain released %v", got)
	}
}
