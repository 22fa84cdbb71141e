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
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
)

const operatorNamespace = "nvidia-dra"

// Named timeouts: the controller reacts to events, so everything it does lands within a few seconds.
const (
	reconciled = 20 * time.Second
	poll       = 100 * time.Millisecond
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
	env, err = envtest.Start()
	Expect(err).NotTo(HaveOccurred(), "start kube-apiserver and etcd")
	k8s = env.Client

	Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}})).To(Succeed())

	startController()
})

// startController starts a manager running the ComputeDomain controller with a fresh channel allocator,
// as a controller process does when it starts.
func startController() {
	GinkgoHelper()
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(2), textlogger.Output(GinkgoWriter)))
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:     env.Scheme,
		Logger:     logger,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cache.Options{ByObject: computedomain.CacheByObject(operatorNamespace)},
	})
	Expect(err).NotTo(HaveOccurred())
	registry = prometheus.NewRegistry()
	metrics, err := computedomain.NewMetrics(registry)
	Expect(err).NotTo(HaveOccurred())
	r, err := computedomain.NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(computedomain.ControllerName), metrics,
		computedomain.Config{OperatorNamespace: operatorNamespace, DaemonImage: "registry.example/compute-domain:test"})
	Expect(err).NotTo(HaveOccurred())

	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	Expect(r.SetupWithManager(ctx, mgr, 4)).To(Succeed())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	stop = func() {
		cancel()
		<-done
	}
}

var _ = AfterSuite(func() {
	if stop != nil {
		stop()
	}
	Expect(env.Stop()).To(Succeed())
})
