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

package clustercli

import (
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// StopQuietly stops the cluster with the process's stderr silenced, unless
// SIMCLUSTER_KLOG asks for the control plane's logs. kube-apiserver's etcd
// client logs every request canceled by the shutdown at warning level
// through a logger of its own that no setting reaches (ETCD_CLIENT_DEBUG
// cannot lower it below info in k8s.io/apiserver v0.37.2).
func StopQuietly(c *simcluster.Cluster) {
	if _, verbose := os.LookupEnv(simcluster.KlogEnv); verbose {
		c.Stop()
		return
	}
	fd, err := unix.Dup(2)
	if err != nil {
		c.Stop()
		return
	}
	saved := os.NewFile(uintptr(fd), "stderr")
	defer func() { _ = saved.Close() }()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		c.Stop()
		return
	}
	defer func() { _ = devNull.Close() }()
	if err := unix.Dup2(int(devNull.Fd()), 2); err != nil {
		c.Stop()
		return
	}
	defer func() { _ = unix.Dup2(fd, 2) }()
	// A crash in the teardown (a panic in any goroutine) still reaches the real stderr.
	if debug.SetCrashOutput(saved, debug.CrashOptions{}) == nil {
		defer func() { _ = debug.SetCrashOutput(nil, debug.CrashOptions{}) }()
	}
	c.Stop()
}
