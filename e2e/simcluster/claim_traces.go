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
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	gpuapp "github.com/computedomain-operator/computedomain-operator/cmd/gpu-kubelet-plugin/app"
)

// ClaimTraces lists the files on a node that still mention a claim UID: CDI
// specs, the plugins' checkpoints (anything under the plugins directory) and
// the kubelet's DRA checkpoint. An unprepared claim leaves none (the GPU
// plugin's usage ledger, which keeps it for billing, is not looked at).
func (c *Cluster) ClaimTraces(node, claimUID string) ([]string, error) {
	paths, err := c.NodePaths(node)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, dir := range []string{paths.CDI, paths.Plugins, filepath.Join(paths.KubeletState, "dra_manager_state")} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if d.IsDir() || d.Type()&fs.ModeSocket != 0 || !d.Type().IsRegular() {
				return nil
			}
			if d.Name() == gpuapp.UsageLedgerFile {
				// The usage ledger is the record of past use, kept for
				// billing, not preparation state.
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if bytes.Contains(data, []byte(claimUID)) || bytes.Contains([]byte(d.Name()), []byte(claimUID)) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("scan %s: %w", dir, err)
		}
	}
	return found, nil
}
