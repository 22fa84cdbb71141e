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

// Package crashtest drives the kubelet plugins' crash harnesses: a random script of prepares and unprepares
// over a node's claims, a crash hook that kills the plugin at a random one of the crash points the script
// passes, and the kubelet's answer to a crash (retry the call, or unprepare a claim whose pod was deleted while
// it failed to prepare). Each plugin checks its own node afterwards.
package crashtest

import (
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
)

// Step is one kubelet call of a script: prepare or unprepare claim Claim (an index into the node's claims).
type Step struct {
	Prepare bool
	Claim   int
}

// Script prepares each of n claims once, in random order, and unprepares a random half of them again, each
// after its prepare.
func Script(rng *rand.Rand, n int) []Step {
	var steps []Step
	for _, i := range rng.Perm(n) {
		steps = append(steps, Step{Prepare: true, Claim: i})
	}
	for _, i := range rng.Perm(n)[:n/2+rng.IntN(2)] {
		after := slices.IndexFunc(steps, func(s Step) bool { return s.Prepare && s.Claim == i }) + 1
		steps = slices.Insert(steps, after+rng.IntN(len(steps)-after+1), Step{Claim: i})
	}
	return steps
}

// Hook crashes at the k-th crash point it is asked about and records which point that was; armed again
// (Arm), it crashes once more, which is how a harness kills a plugin a second time while it restarts, runs its
// start-up reconcile or rolls back the prepare the first kill interrupted.
type Hook struct {
	k, hits int
	// Point is where it first crashed; "" until then.
	Point string
	// Points are all the points it crashed at, in order.
	Points []string
}

// NewHook crashes at a random one of the first maxHits crash-point hits.
func NewHook(rng *rand.Rand, maxHits int) *Hook { return &Hook{k: 1 + rng.IntN(maxHits)} }

// Arm makes the hook crash again at a random one of the next within hits.
func (h *Hook) Arm(rng *rand.Rand, within int) { h.k = h.hits + 1 + rng.IntN(within) }

// At is the plugins' draplugin.CrashHook.
func (h *Hook) At(point string) bool {
	h.hits++
	if h.hits == h.k {
		if h.Point == "" {
			h.Point = point
		}
		h.Points = append(h.Points, point)
		return true
	}
	return false
}

// Hooked is a Node whose plugin is built with the hook (from its start-up on, Restart included), so that Run
// can kill it again while it recovers.
type Hooked interface {
	Node
	CrashHook() *Hook
}

// maxCrashesPerCall bounds the kills of one call and its recovery.
const maxCrashesPerCall = 3

// Recover runs call and reports whether it crashed at a crash point; other panics go on.
func Recover(call func() error) (crashed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if r != draplugin.ErrSimulatedCrash { //nolint:errorlint // recover returns the panic value itself
				panic(r)
			}
			crashed = true
		}
	}()
	return false, call()
}

// Node is what a harness needs of a plugin on one simulated node.
type Node interface {
	// Restart builds the plugin anew on the node's checkpoint, files and devices, as after a kill.
	Restart()
	// Call prepares or unprepares claim i.
	Call(prepare bool, i int) error
}

// Run plays the script on the node: a call that crashes is followed by a restart and the kubelet's answer,
// the same call again or, with probability 1/2 for a prepare, the unprepare of a claim whose pod was deleted
// meanwhile (its later steps are dropped). A Hooked node is, with probability 1/2 after each kill, killed again
// within its next few crash points: during the restart's start-up reconcile or the answer's roll-back of what
// the kill interrupted (at most maxCrashesPerCall kills per call). It returns the claims the script leaves
// prepared.
func Run(t *testing.T, rng *rand.Rand, node Node, steps []Step, trial string) map[int]bool {
	t.Helper()
	hooked, _ := node.(Hooked)
	prepared, abandoned := map[int]bool{}, map[int]bool{}
	for _, s := range steps {
		if abandoned[s.Claim] {
			continue
		}
		crashed, err := Recover(func() error { return node.Call(s.Prepare, s.Claim) })
		for kills := 1; crashed; kills++ {
			if hooked != nil && kills < maxCrashesPerCall && rng.IntN(2) == 0 {
				hooked.CrashHook().Arm(rng, 3)
			}
			if crashed, _ = Recover(func() error { node.Restart(); return nil }); crashed {
				if kills >= maxCrashesPerCall {
					t.Fatalf("%s: the plugin crashed %d times in one call and its recovery", trial, kills)
				}
				continue
			}
			if kills == 1 && s.Prepare && rng.IntN(2) == 0 {
				abandoned[s.Claim] = true
				s = Step{Claim: s.Claim}
			}
			if crashed, err = Recover(func() error { return node.Call(s.Prepare, s.Claim) }); crashed && (hooked == nil || kills >= maxCrashesPerCall) {
				t.Fatalf("%s: the restarted plugin crashed", trial)
			}
		}
		if err != nil {
			t.Fatalf("%s: %s of claim %d: %v", trial, map[bool]string{true: "prepare", false: "unprepare"}[s.Prepare], s.Claim, err)
		}
		if s.Prepare {
			prepared[s.Claim] = true
		} else {
			delete(prepared, s.Claim)
		}
	}
	return prepared
}

// Harness runs trial until CRASH_TRIALS (default def) trials crashed and every one of points was hit at
// least once, however rare (bounded at ten times the trials), and fails otherwise. trial runs one script with
// a crash hook and returns the point it crashed at ("" when it drew more hits than the script passed).
func Harness(t *testing.T, def int, points []string, trial func(rng *rand.Rand, name string) string) {
	t.Helper()
	trials, rng := Trials(t, def)
	crashes, hits := 0, map[string]int{}
	covered := func() bool { return !slices.ContainsFunc(points, func(p string) bool { return hits[p] == 0 }) }
	for attempt := 0; (crashes < trials || !covered()) && attempt < 10*trials; attempt++ {
		if point := trial(rng, "attempt "+strconv.Itoa(attempt)); point != "" {
			crashes++
			hits[point]++
		}
	}
	t.Logf("%d crashes survived; by point: %v", crashes, hits)
	if crashes < trials || (trials > 0 && !covered()) {
		t.Fatalf("%d of %d trials reached a crash point, by point %v; want every one of %v", crashes, trials, hits, points)
	}
}

// Trials is CRASH_TRIALS (default def) and a seeded generator (CRASH_SEED, default the time), logged so that
// a failure can be replayed.
func Trials(t *testing.T, def int) (int, *rand.Rand) {
	t.Helper()
	trials, seed := def, uint64(time.Now().UnixNano())
	if s := os.Getenv("CRASH_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("CRASH_TRIALS=%q: want a number", s)
		}
		trials = n
	}
	if s := os.Getenv("CRASH_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CRASH_SEED=%q: want a number", s)
		}
		seed = n
	}
	t.Logf("CRASH_SEED=%d CRASH_TRIALS=%d", seed, trials)
	return trials, rand.New(rand.NewPCG(seed, 0))
}

// CheckRecorded checks a plugin's recorded claims (its checkpoint) against the claims a script left
// prepared, by UID: each recorded claim is one of them and completed, each of them is recorded, and no
// device (or slot) is in two claims.
func CheckRecorded(t testing.TB, recorded map[string]checkpoint.ClaimState, prepared map[string]bool, trial string) {
	t.Helper()
	// A device belongs to one claim, or to any number of claims each holding a share of it (consumable
	// capacity), never both.
	owner, sharer := map[string]string{}, map[string]string{}
	for _, uid := range slices.Sorted(maps.Keys(recorded)) {
		cs := recorded[uid]
		if !prepared[uid] {
			t.Errorf("%s: claim %s is recorded (%s) but not prepared", trial, uid, cs.Status)
		}
		if cs.Status != checkpoint.PrepareCompleted {
			t.Errorf("%s: claim %s is %s, want %s", trial, uid, cs.Status, checkpoint.PrepareCompleted)
		}
		for _, dev := range cs.Devices {
			other, taken := owner[dev.Device]
			if !taken && dev.ShareID == "" {
				other, taken = sharer[dev.Device]
			}
			if taken && other != uid {
				t.Errorf("%s: device %s is prepared for claims %s and %s", trial, dev.Device, other, uid)
			}
			if dev.ShareID == "" {
				owner[dev.Device] = uid
			} else {
				sharer[dev.Device] = uid
			}
		}
	}
	for uid := range prepared {
		if _, ok := recorded[uid]; !ok {
			t.Errorf("%s: claim %s should be prepared but is not recorded", trial, uid)
		}
	}
}

// CheckSpecs checks that the claims with a CDI spec on the node (specs, by UID) are exactly the prepared ones.
func CheckSpecs(t testing.TB, specs []string, prepared map[string]bool, trial string) {
	t.Helper()
	var want []string
	for uid := range prepared {
		want = append(want, uid)
	}
	specs = slices.Clone(specs)
	slices.Sort(specs)
	slices.Sort(want)
	if !slices.Equal(specs, want) {
		t.Errorf("%s: CDI specs of claims %v, want those of %v", trial, specs, want)
	}
}
