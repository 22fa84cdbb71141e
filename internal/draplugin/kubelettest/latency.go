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

package kubelettest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// Latencies are the durations of repeated calls.
type Latencies []time.Duration

// Quantile is the q-quantile (0..1) by the nearest-rank rule; 0 when empty.
func (l Latencies) Quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Report reports the median and p99 of l in microseconds as the benchmark's
// metrics <name>-p50-µs and <name>-p99-µs.
func (l Latencies) Report(b *testing.B, name string) {
	b.ReportMetric(float64(l.Quantile(0.50).Nanoseconds())/1e3, name+"-p50-µs")
	b.ReportMetric(float64(l.Quantile(0.99).Nanoseconds())/1e3, name+"-p99-µs")
}

// CheckSane fails the test unless l holds want positive durations whose p99
// is at least their median and below limit: what a benchmark's reduced run in
// the test suite asserts (not a timing goal).
func (l Latencies) CheckSane(t testing.TB, name string, want int, limit time.Duration) {
	t.Helper()
	p50, p99 := l.Quantile(0.50), l.Quantile(0.99)
	switch {
	case len(l) != want:
		t.Errorf("%s: %d samples, want %d", name, len(l), want)
	case slices.Min(l) <= 0:
		t.Errorf("%s: a sample of %s", name, slices.Min(l))
	case p99 < p50 || p99 >= limit:
		t.Errorf("%s: p50 %s, p99 %s: want 0 < p50 <= p99 < %s", name, p50, p99, limit)
	}
	t.Logf("%s: p50 %s p99 %s over %d calls", name, p50, p99, len(l))
}

// PrepareRound prepares one claim and then unprepares it over the DRA
// socket, as the kubelet does when a pod starts and ends, and returns how
// long each call took. check, when set, sees the prepare result.
func PrepareRound(ctx context.Context, dra drapb.DRAPluginClient, claim *drapb.Claim, check func(*drapb.NodePrepareResourceResponse) error) (prepare, unprepare time.Duration, err error) {
	start := time.Now()
	res, err := dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{claim}})
	prepare = time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("prepare %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	r := res.Claims[claim.Uid]
	if r == nil || r.Error != "" {
		return 0, 0, fmt.Errorf("prepare %s/%s: result %+v", claim.Namespace, claim.Name, r)
	}
	if check != nil {
		if err := check(r); err != nil {
			return 0, 0, fmt.Errorf("prepare %s/%s: %w", claim.Namespace, claim.Name, err)
		}
	}
	start = time.Now()
	un, err := dra.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{claim}})
	unprepare = time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("unprepare %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	if e := un.Claims[claim.Uid].GetError(); e != "" {
		return 0, 0, fmt.Errorf("unprepare %s/%s: %s", claim.Namespace, claim.Name, e)
	}
	return prepare, unprepare, nil
}

// MeasureRounds runs rounds PrepareRounds, each with a new claim (claim(i)) that it first creates through
// client (the API the plugin's helper reads claims from) and deletes afterwards, and returns the calls'
// durations. beforeLoop, when set, runs once before the first round (a benchmark's timer reset).
func MeasureRounds(ctx context.Context, tb testing.TB, client kubernetes.Interface, dra drapb.DRAPluginClient, rounds int,
	claim func(i int) *resourceapi.ResourceClaim, check func(*drapb.NodePrepareResourceResponse) error, beforeLoop func()) (prepare, unprepare Latencies) {
	tb.Helper()
	prepare = make(Latencies, 0, rounds)
	unprepare = make(Latencies, 0, rounds)
	if beforeLoop != nil {
		beforeLoop()
	}
	for i := range rounds {
		c := claim(i)
		if _, err := client.ResourceV1().ResourceClaims(c.Namespace).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			tb.Fatal(err)
		}
		p, u, err := PrepareRound(ctx, dra, &drapb.Claim{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}, check)
		if err != nil {
			tb.Fatal(err)
		}
		prepare, unprepare = append(prepare, p), append(unprepare, u)
		if err := client.ResourceV1().ResourceClaims(c.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
	return prepare, unprepare
}
