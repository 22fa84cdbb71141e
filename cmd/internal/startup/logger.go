package startup

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// WithLogger returns ctx carrying the binary's logger, named after the binary
// and tagged with the node: the logger already in ctx (a simulated cluster's)
// when there is one, otherwise a text logger to stderr configured by cfg (the
// binary's own -v/--vmodule flags).
func WithLogger(ctx context.Context, cfg *textlogger.Config, binary, nodeName string) context.Context {
	logger, err := logr.FromContext(ctx)
	if err != nil {
		logger = textlogger.NewLogger(cfg)
	}
	return klog.NewContext(ctx, logger.WithName(binary).WithValues("node", nodeName))
}
