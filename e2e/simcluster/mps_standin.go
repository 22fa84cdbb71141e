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
	"strings"
	"syscall"

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
// nvidia-cuda-mps-control is, and killed when the plugin's container ends
// (killMPSDaemonsOf). The path is outside every container mount, so the node
// runtime passes it to the in-process plugin unchanged.
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

// killMPSDaemonsOf SIGKILLs the MPS control daemons a GPU plugin container
// with these arguments and environment started: those of its control binary
// under its plugins directory.
func killMPSDaemonsOf(args []string, env map[string]string) {
	binary, plugins, driver := env["MPS_CONTROL_BINARY"], "", gpu.DefaultDriverName
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--mps-control-binary="); ok {
			binary = v
		}
		if v, ok := strings.CutPrefix(a, "--kubelet-plugins-directory-path="); ok {
			plugins = v
		}
		if v, ok := strings.CutPrefix(a, "--driver-name="); ok {
			driver = v
		}
	}
	if binary == "" || plugins == "" {
		return
	}
	ds, _ := mps.Exec{Binary: binary, Root: filepath.Join(plugins, driver, gpu.MPSDaemonsDir)}.Daemons()
	for _, d := range ds {
		if d.PID != 0 {
			_ = syscall.Kill(d.PID, syscall.SIGKILL)
		}
	}
}

// stopMPSDaemons ends every MPS control daemon the nodes' plugins left
// and removes their directories: the cluster's nodes go.
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
