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
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Footprint is what the process holds once its cluster is up: "17,452 file descriptors (17.0 per node), RSS
// 10,461 MB". The file descriptors are what limits a simulated cluster's size (a process may hold 20,000 on the
// machines of docs/benchmarks.md); an entry it cannot read says so instead of a figure.
func Footprint(nodes int) string {
	fds := "file descriptors unknown"
	if entries, err := os.ReadDir("/proc/self/fd"); err == nil {
		fds = fmt.Sprintf("%d file descriptors (%.1f per node)", len(entries), float64(len(entries))/float64(max(1, nodes)))
	}
	return fds + ", " + residentMemory()
}

func residentMemory() string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "RSS unknown"
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			var kb int
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return fmt.Sprintf("RSS %d MB", kb/1024)
			}
		}
	}
	return "RSS unknown"
}
