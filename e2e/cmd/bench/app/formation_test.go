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
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
)

// TestBenchFormationRuns is bench formation's reduced run in the test suite (make bench runs
// 16, 64 and 256 nodes): an 8-node domain over two racks forms, the API server's audit log
// counts our components' writes, and the JSON and the plot are written. Not a timing goal: the machine is shared.
func TestBenchFormationRuns(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	file := filepath.Join(dir, "formation-8.json")
	var out bytes.Buffer
	err := Run(ctx, []string{"formation", "--racks", "2", "--nodes-per-rack", "4", "--extra", "", "--runs", "1",
		"--formation-timeout", "3m", "--json", file}, &out, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var r formationJSON
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Nodes != 8 || len(r.Runs) != 1 {
		t.Fatalf("%+v", r)
	}
	run := r.Runs[0]
	if run.Ready <= 0 || run.Bound <= 0 || run.Running < run.Bound || math.Abs(run.BoundToRunning-(run.Running-run.Bound)) > 1e-6 {
		t.Errorf("phases %+v", run)
	}
	// A healthy forming domain's pods are prepared by their first NodePrepareResources call: none waits
	// for the kubelet's resync.
	if run.Retried != 0 || run.FailedPrepares != 0 {
		t.Errorf("%d pods needed a prepare retry (%d failed prepares), want 0\n%s", run.Retried, run.FailedPrepares, out.String())
	}
	// The audit log saw the controller's writes at least (finalizer, templates, status); at most two per
	// node and 16 per domain.
	if limit := 2 + 16.0/8; run.WritesPerNode <= 0 || run.WritesPerNode > limit || run.ConflictsOr429 != 0 {
		t.Errorf("%.2f audited writes per node, %d 409/429 answers; want (0, %.1f] and 0\n%s", run.WritesPerNode, run.ConflictsOr429, limit, out.String())
	}
	if run.ControllerCPU < 0 || run.ControllerCPU > run.Running {
		t.Errorf("controller CPU %.3f s over a formation of %.3f s", run.ControllerCPU, run.Running)
	}
	// The controller's watch at least saw the domain's creation and status writes; a watch event is more than
	// a few bytes.
	if run.DomainWatchEvents < 2 || run.DomainWatchBytes < 100*run.DomainWatchEvents {
		t.Errorf("ComputeDomain watch events %.0f, bytes %.0f; want at least 2 events of 100 bytes or more\n%s", run.DomainWatchEvents, run.DomainWatchBytes, out.String())
	}
	for _, row := range []string{"API writes per node, API server's audit log", "last pod bound → all pods Running", "pods that needed a prepare retry", "controller CPU per node", "ComputeDomain watch bytes sent"} {
		if !strings.Contains(out.String(), row) {
			t.Errorf("the table has no row %q:\n%s", row, out.String())
		}
	}
	pngFile := filepath.Join(dir, "formation.png")
	out.Reset()
	if err := Run(context.Background(), []string{"plot", "--out", pngFile, file}, &out, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	f, err := os.Open(pngFile)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the plot is no PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 200 {
		t.Errorf("plot of %dx%d pixels", b.Dx(), b.Dy())
	}
}

// TestFailedPreparesCountsPodsAndRepeats: the pods of the run with a FailedPrepareDynamicResources event, and
// the events with their repeats; other reasons and other runs' pods do not count.
func TestFailedPreparesCountsPodsAndRepeats(t *testing.T) {
	event := func(name, pod, reason string, count int32) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: benchNamespace},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: benchNamespace, Name: pod},
			Reason:         reason, Type: corev1.EventTypeWarning, Count: count,
		}
	}
	client := fake.NewClientset(
		event("a", "bench-0-0-x", failedPrepareReason, 2),
		event("b", "bench-0-1-y", failedPrepareReason, 1),
		event("c", "bench-0-2-z", "Scheduled", 1),
		event("d", "bench-1-0-w", failedPrepareReason, 1),
	)
	pods, events, err := formationBench{client: client}.failedPrepares(context.Background(), "bench-0")
	if err != nil {
		t.Fatal(err)
	}
	if pods != 2 || events != 3 {
		t.Errorf("pods %d, events %d; want 2 and 3", pods, events)
	}
}
