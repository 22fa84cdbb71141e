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
