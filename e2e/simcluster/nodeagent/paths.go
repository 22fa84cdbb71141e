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

package nodeagent

import (
	"fmt"
	"os"
	"path/filepath"
)

// Paths are the node's host-root directories the kubelet and the plugins use.
type Paths struct {
	// Root is the node's host root; every path below lies inside it.
	Root string
	// PluginsRegistry is /var/lib/kubelet/plugins_registry.
	PluginsRegistry string
	// Plugins is /var/lib/kubelet/plugins.
	Plugins string
	// KubeletState is /var/lib/kubelet (the DRA manager's checkpoint).
	KubeletState string
	// CDI is /var/run/cdi.
	CDI string
}

// PathsFor lays out the kubelet paths under a node's host root.
func PathsFor(root string) Paths {
	return Paths{
		Root:            root,
		PluginsRegistry: filepath.Join(root, "var/lib/kubelet/plugins_registry"),
		Plugins:         filepath.Join(root, "var/lib/kubelet/plugins"),
		KubeletState:    filepath.Join(root, "var/lib/kubelet"),
		CDI:             filepath.Join(root, "var/run/cdi"),
	}
}

// Create makes every directory.
func (p Paths) Create() error {
	for _, dir := range []string{p.PluginsRegistry, p.Plugins, p.KubeletState, p.CDI} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	return nil
}
