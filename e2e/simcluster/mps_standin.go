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
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
	"github.com/computedomain-operator/computedomain-operator/internal/mps"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/gpu"
)

// MPSControlStandinName is the stand-in nvidia-cuda-mps-control's binary
// (cmd/mps-control-standin), as in the operator image.
const MPSControlStandinName = "mps-control-standin"

// buildMPSControlStandin builds cmd/mps-control-standin into <dir>/bin. The
// simulated nodes' GPU plugins run it as their MPS control binary
// (kubeletPlugin.gpu.mpsControlBinary), as kind's values run the image's: a
// real process per MPS claim, started, told its limits and quit the way
// nvidia-cuda-mps-control is. The path is outside every container mount, so
// the node runtime passes it to the in-process plugin unchanged.
func buildMPSControlStandin(ctx context.Context, dir string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "bin", MPSControlStandinName)
	build := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/"+MPSControlStandinName)
	build.Dir = root
	// No cgo: a static binary, built with neither the product's nor the e2e
	// module's C flags.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the MPS control stand-in (go build ./cmd/%s in %s): %w\n%s", MPSControlStandinName, root, err, b)
	}
	return out, nil
}

// MPSDaemons is the MPS control daemons the GPU plugin of a node runs, by ID
// (the claim UID), each with its process (PID 0: its directory is left, its
// process is gone); nil when the cluster has no stand-in.
func (c *Cluster) MPSDaemons(node string) (map[string]mps.Daemon, error) {
	if c.mpsStandin == "" {
		return nil, nil
	}
	return c.mpsExec(node).Daemons()
}

// MPSDaemonsRoot is the node's directory that holds its MPS control daemons'
// directories (<plugins>/gpu.nvidia.com/mps on its host root).
func (c *Cluster) MPSDaemonsRoot(node string) string {
	return filepath.Join(nodeagent.PathsFor(filepath.Join(c.dir, "n", node)).Plugins, gpu.DefaultDriverName, gpu.MPSDaemonsDir)
}

func (c *Cluster) mpsExec(node string) mps.Exec {
	return mps.Exec{Binary: c.mpsStandin, Root: c.MPSDaemonsRoot(node)}
}

// stopMPSDaemons ends every MPS control daemon the nodes' plugins left
// running: they are processes of their own, which outlive the plugins (as
// on a node) but not the cluster.
func (c *Cluster) stopMPSDaemons(ctx context.Context) {
	if c.mpsStandin == "" {
		return
	}
	for _, n := range c.nodes {
		if n == nil {
			continue
		}
		e := c.mpsExec(n.spec.Name)
		ds, _ := e.Daemons()
		for _, d := range ds {
			_ = e.Stop(ctx, d)
		}
	}
}
