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
