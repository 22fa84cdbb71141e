package envtest

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
)

// DaemonImage is the IMEX daemon image the test controller puts in the
// DaemonSets it creates.
const DaemonImage = "registry.example/compute-domain:test"

// ControllerWorkers is the test controller's number of concurrent reconciles.
const ControllerWorkers = 4

// StartController starts a manager running the ComputeDomain controller for
// operatorNamespace against e, as a controller process does when it starts:
// the logger is ctx's, metrics go to reg, no metrics server is bound. stop
// ends the manager and returns what its Start returned.
func (e *Env) StartController(ctx context.Context, operatorNamespace string, reg prometheus.Registerer) (stop func() error, err error) {
	logger := klog.FromContext(ctx)
	byObject, err := computedomain.CacheByObject(operatorNamespace)
	if err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:     e.Scheme,
		Logger:     logger,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		Cache:      cache.Options{ByObject: byObject},
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	metrics, err := computedomain.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	r, err := computedomain.NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder(computedomain.ControllerName), metrics,
		computedomain.Config{OperatorNamespace: operatorNamespace, DaemonImage: DaemonImage})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	if err := r.SetupWithManager(ctx, mgr, ControllerWorkers); err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		return <-done
	}, nil
}
