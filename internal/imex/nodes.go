package imex

import (
	"fmt"
	"os"
	"strings"
)

// ReadNodesFile returns the peer addresses of a nodes file (the file the
// config's IMEX_NODE_CONFIG_FILE names): one address per line, the node's own
// included, blank lines and '#' comments skipped, duplicates dropped, order
// kept. A missing file is an empty peer list (IMEX may start before it knows
// any peer).
func ReadNodesFile(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read nodes file: %w", err)
	}
	var addrs []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || seen[line] {
			continue
		}
		seen[line] = true
		addrs = append(addrs, line)
	}
	return addrs, nil
}
