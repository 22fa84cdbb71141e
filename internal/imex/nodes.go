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
