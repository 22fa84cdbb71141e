package draplugin

import (
	"context"
	"errors"
	"fmt"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// HandleBackgroundError is our plugins' kubeletplugin.DRAPlugin.HandleError:
// background errors (slice publishing, stale health reports) are logged, and
// the helper retries the recoverable ones. Any other is handed to fatal (nil:
// logged only), which stops the plugin so that it restarts visibly instead
// of, for example, publishing a pool the scheduler misreads because the API
// server dropped fields (a feature gate is off).
func HandleBackgroundError(ctx context.Context, err error, msg string, fatal func(error)) {
	utilruntime.HandleErrorWithContext(ctx, err, msg)
	if errors.Is(err, kubeletplugin.ErrRecoverable) || fatal == nil {
		return
	}
	fatal(fmt.Errorf("%s: %w", msg, err))
}
