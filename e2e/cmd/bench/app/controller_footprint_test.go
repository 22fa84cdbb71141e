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

package app

import (
	"context"
	"os"
	"testing"
	"time"

	controllerapp "github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-controller/app"
)

// TestMain makes the test binary the controller's child process too, as main does.
func TestMain(m *testing.M) {
	if isControllerChild() {
		if err := controllerapp.Run(context.Background(), os.Args[1:]); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestFootprintOfTwentyDomains is the benchmark's reduced run in the test suite (make bench runs 1,000
// domains over 2,000 nodes): the controller, a process of its own, settles 20 domains over 40 nodes with
// every reconcile counted and its RSS read. Not a timing or memory goal: the machine is shared.
func TestFootprintOfTwentyDomains(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := footprintOptions{domains: 20, nodes: 40, namespaces: 2, workers: 8, timeout: 2 * time.Minute}
	f, err := measureFootprint(ctx, o, exe, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	if f.peakRSS < 1<<20 || f.rss > f.peakRSS {
		t.Errorf("peak RSS %d, RSS %d bytes", f.peakRSS, f.rss)
	}
	if f.reconciles < o.domains || f.p50 <= 0 || f.p99 < f.p50 {
		t.Errorf("%d reconciles, p50 %s, p99 %s: want at least one per domain and 0 < p50 <= p99", f.reconciles, f.p50, f.p99)
	}
	if f.steadyReconciles < o.domains || f.steadyP99 < f.steadyP50 {
		t.Errorf("steady phase: %d reconciles, p50 %s, p99 %s: want at least one per domain", f.steadyReconciles, f.steadyP50, f.steadyP99)
	}
	t.Logf("%+v", f)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
