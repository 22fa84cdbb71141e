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
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
)

// TestRunInProcess runs the binary's Run against a real API server, the way the simulated cluster runs it
// in-process, twice in one process (nothing may be registered twice): each time a domain gets its claim
// templates, the metrics endpoint serves the controller's own metrics next to controller-runtime's, and
// canceling the context stops it cleanly.
func TestRunInProcess(t *testing.T) {
	g := NewWithT(t)
	env, err := envtest.Start()
	g.Expect(err).NotTo(HaveOccurred(), "start kube-apiserver and etcd")
	defer func() { g.Expect(env.Stop()).To(Succeed()) }()

	ctx := context.Background()
	for _, ns := range []string{"cd-operator", "team-a"} {
		g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	for run, domain := range []string{"first", "second"} {
		metricsAddr := freeAddress(t)
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- RunWithConfig(runCtx, env.Config, []string{
				"--namespace=cd-operator",
				"--metrics-bind-address=" + metricsAddr, "--health-probe-bind-address=0", "-v=2",
			})
		}()

		cd := utiltesting.MakeComputeDomain(domain, "team-a").Channel(domain + "-channel").Obj()
		g.Expect(env.Client.Create(ctx, cd)).To(Succeed())
		g.Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: domain + "-channel"}, &resourcev1.ResourceClaimTemplate{})
		}).WithTimeout(20*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(), "run %d", run)

		// The second run's own registry counts only its own writes: the domain of the first run already has
		// its template.
		g.Eventually(func() (string, error) { return scrape(metricsAddr) }).WithTimeout(10*time.Second).Should(And(
			ContainSubstring(`computedomain_controller_api_writes_total{kind="ResourceClaimTemplate",verb="create"} 1`),
			ContainSubstring(`controller_runtime_reconcile_total{controller="compute-domain-controller",result="success"}`),
			ContainSubstring(`workqueue_adds_total{controller="compute-domain-controller"`),
		), "run %d", run)

		cancel()
		g.Eventually(done).WithTimeout(20*time.Second).Should(Receive(BeNil()), "run %d", run)
	}
}

// scrape returns what the metrics endpoint at addr serves.
func scrape(addr string) (string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func freeAddress(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}
