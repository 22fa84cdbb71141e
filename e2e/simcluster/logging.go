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

package simcluster

import (
	"flag"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// KlogEnv enables the control plane's own (global klog) logging when set to a
// verbosity, e.g. SIMCLUSTER_KLOG=2. By default it is silent.
const KlogEnv = "SIMCLUSTER_KLOG"

// KlogVmoduleEnv sets klog's -vmodule with KlogEnv, e.g. SIMCLUSTER_KLOG=0
// SIMCLUSTER_KLOG_VMODULE=controller=5 for one component's files only.
const KlogVmoduleEnv = "SIMCLUSTER_KLOG_VMODULE"

var klogOnce sync.Once

// configureGlobalKlog silences the process-global klog output the upstream
// components write to, unless KlogEnv asks for it.
func configureGlobalKlog() {
	klogOnce.Do(func() {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		if v, ok := os.LookupEnv(KlogEnv); ok {
			if _, err := strconv.Atoi(v); err != nil {
				v = "2"
			}
			_ = fs.Set("v", v)
			if m, ok := os.LookupEnv(KlogVmoduleEnv); ok {
				_ = fs.Set("vmodule", m)
			}
			return
		}
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("alsologtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
	})
}

// componentLogger is the logger handed to upstream components.
func componentLogger() klog.Logger {
	if _, ok := os.LookupEnv(KlogEnv); ok {
		return klog.Background()
	}
	return logr.Discard()
}
