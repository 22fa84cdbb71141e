package app

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// stopQuietly stops the cluster with the process's stderr silenced, unless
// SIMCLUSTER_KLOG asks for the control plane's logs. kube-apiserver's etcd
// client logs every request canceled by the shutdown at warning level
// through a logger of its own that no setting reaches (ETCD_CLIENT_DEBUG
// cannot lower it below info in k8s.io/apiserver v0.37.2).
func stopQuietly(c *simcluster.Cluster) {
	if _, verbose := os.LookupEnv(simcluster.KlogEnv); verbose {
		c.Stop()
		return
	}
	saved, err := unix.Dup(2)
	if err != nil {
		c.Stop()
		return
	}
	defer func() { _ = unix.Close(saved) }()
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
	defer func() { _ = unix.Dup2(saved, 2) }()
	c.Stop()
}
