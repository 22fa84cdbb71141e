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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
)

// TestMetricsEndpointServesBothRegistries serves the controller's own registry through the binary's
// endpoint, twice in one process: each endpoint serves the controller's metrics and controller-runtime's
// (its process-global registry holds the Go runtime collector from the start; its reconcile and work queue
// metrics are scraped in TestRunInProcess, once a controller runs).
func TestMetricsEndpointServesBothRegistries(t *testing.T) {
	g := NewWithT(t)
	for range 2 {
		registry := prometheus.NewRegistry()
		_, err := computedomain.NewMetrics(registry)
		g.Expect(err).NotTo(HaveOccurred())
		addr := freeAddress(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- (&metricsEndpoint{address: addr, gatherer: metricsGatherer(registry)}).Start(ctx) }()

		g.Eventually(func() (string, error) { return scrape(addr) }).WithTimeout(10 * time.Second).Should(And(
			ContainSubstring("computedomain_formation_seconds_count 0"),
			ContainSubstring("go_goroutines "),
		))
		cancel()
		g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
	}
}
