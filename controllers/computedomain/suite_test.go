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

package computedomain_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/controllertest"
	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
)

const operatorNamespace = "nvidia-dra"

// Named timeouts: the controller reacts to events, so everything it does lands within a few seconds.
const (
	reconciled = 20 * time.Second
	poll       = 100 * time.Millisecond
	// consistently is how long a state that must not change is watched.
	consistently = 2 * time.Second
)

var (
	env      *envtest.Env
	k8s      client.Client
	registry *prometheus.Registry
	stop     func()
)

func TestComputeDomainController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ComputeDomain controller (envtest)")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = envtest.Start(envtest.WithWorkloadAPI())
	Expect(err).NotTo(HaveOccurred(), "start kube-apiserver and etcd")
	k8s = env.Client

	Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}})).To(Succeed())

	startController()
})

// startController starts a manager running the ComputeDomain controller with a fresh channel allocator,
// as a controller process does when it starts.
func startController(opts ...func(*computedomain.Config)) {
	GinkgoHelper()
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(2), textlogger.Output(GinkgoWriter)))
	registry = prometheus.NewRegistry()
	stopController, err := controllertest.Start(klog.NewContext(context.Background(), logger), env, operatorNamespace, registry, opts...)
	Expect(err).NotTo(HaveOccurred())
	stop = func() {
		Expect(stopController()).To(Succeed())
	}
}

var _ = AfterSuite(func() {
	if stop != nil {
		stop()
	}
	Expect(env.Stop()).To(Succeed())
})
