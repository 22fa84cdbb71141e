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
// binary's own -v/--vmodule flags). A cluster-wide binary passes no node.
func WithLogger(ctx context.Context, cfg *textlogger.Config, binary, nodeName string) context.Context {
	logger, err := logr.FromContext(ctx)
	if err != nil {
		logger = textlogger.NewLogger(cfg)
	}
	logger = logger.WithName(binary)
	if nodeName != "" {
		logger = logger.WithValues("node", nodeName)
	}
	return klog.NewContext(ctx, logger)
}
