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
