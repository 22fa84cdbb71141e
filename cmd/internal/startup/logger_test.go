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
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

func TestWithLoggerKeepsTheCallersLoggerNamedAndTagged(t *testing.T) {
	var lines []string
	caller := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	ctx := WithLogger(logr.NewContext(context.Background(), caller), textlogger.NewConfig(), "my-plugin", "tray-3")
	klog.FromContext(ctx).Info("started")
	if len(lines) != 1 || !strings.Contains(lines[0], "my-plugin") || !strings.Contains(lines[0], `"node"="tray-3"`) {
		t.Errorf("caller's logger got %q, want one line named my-plugin with node tray-3", lines)
	}
}

func TestWithLoggerWithoutOneInContextUsesTheFlagsLogger(t *testing.T) {
	ctx := WithLogger(context.Background(), textlogger.NewConfig(), "my-plugin", "tray-3")
	if _, err := logr.FromContext(ctx); err != nil {
		t.Errorf("no logger in the returned context: %v", err)
	}
}
