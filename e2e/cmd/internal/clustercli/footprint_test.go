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
	"os"
	"regexp"
	"testing"
)

// The footprint names this process's open file descriptors, per node, and its resident memory.
func TestFootprintCountsThisProcesssFilesPerNodeAndItsMemory(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	got := Footprint(2)
	if !regexp.MustCompile(`^[1-9][0-9]* file descriptors \([0-9]+\.[0-9] per node\), RSS [1-9][0-9]* MB$`).MatchString(got) {
		t.Errorf("Footprint(2) = %q, want the open descriptors (at least the one opened here), per node, and RSS", got)
	}
}
