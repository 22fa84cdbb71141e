package simcluster

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ClaimTraces lists the files on a node that still mention a claim UID: CDI
// specs, the plugins' checkpoints (anything under the plugins directory) and
// the kubelet's DRA checkpoint. An unprepared claim leaves none.
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
