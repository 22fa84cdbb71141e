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

// Package formation_test tells the node side's stories against a real
// kube-apiserver (envtest): the ComputeDomain controller, one IMEX daemon per
// node (the in-process stand-in, real TCP between loopback addresses) and one
// compute-domain kubelet plugin driver per node, as the kubelet would call it.
// There is no scheduler, ResourceClaim controller, DaemonSet controller or
// kubelet: the stories create and allocate the workload claims as those would,
// and start the daemons the domain's DaemonSet would start, on the nodes its
// node affinity lists.
package formation_test

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
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/controllertest"
	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
	cdplugin "github.com/computedomain-operator/computedomain-operator/kubeletplugin/computedomain"
)

const operatorNamespace = "nvidia-dra"

// Named timeouts: everything is event-driven, so each step lands within seconds.
const (
	formed = 30 * time.Second
	poll   = 50 * time.Millisecond
)

var (
	env *envtest.Env
	k8s client.WithWatch
	// domainCache is the plugins' ComputeDomain cache (one per node in a
	// real cluster; shared here).
	domainCache cache.Cache
	suiteCtx    context.Context
	stop        func()
)

func TestFormation(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ComputeDomain node side (envtest)")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = envtest.Start()
	Expect(err).NotTo(HaveOccurred(), "start kube-apiserver and etcd")
	k8s, err = client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}})).To(Succeed())

	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(2), textlogger.Output(GinkgoWriter)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	suiteCtx = ctx

	stopController, err := controllertest.Start(ctx, env, operatorNamespace, prometheus.NewRegistry())
	Expect(err).NotTo(HaveOccurred())

	domainCache, err = cache.New(env.Config, cache.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	Expect(domainCache.IndexField(ctx, &v1beta1.ComputeDomain{}, cdplugin.DomainUIDIndex, cdplugin.IndexDomainUID)).To(Succeed())
	_, err = domainCache.GetInformer(ctx, &v1beta1.ComputeDomain{})
	Expect(err).NotTo(HaveOccurred())

	cacheDone := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(cacheDone)
		Expect(domainCache.Start(ctx)).To(Succeed())
	}()
	Expect(domainCache.WaitForCacheSync(ctx)).To(BeTrue())
	stop = func() {
		cancel()
		Expect(stopController()).To(Succeed())
		<-cacheDone
	}
})

var _ = AfterSuite(func() {
	if stop != nil {
		stop()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
