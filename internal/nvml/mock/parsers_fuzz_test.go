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

package mock

import (
	"bytes"
	"testing"
)

// FuzzParseProfile: any profile text either decodes and validates (counts, MIG profiles and placements
// within their bounds) or is refused with an error; nothing panics, and a valid profile validates again.
func FuzzParseProfile(f *testing.F) {
	for _, name := range ProfileNames() {
		data, err := embeddedProfiles.ReadFile("profiles/" + name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("name: x\n"))
	f.Add([]byte("name: x\ngpus: -1\n"))
	// Found by this target: an unbounded placement made the layout dry run allocate gigabytes and loop forever.
	huge, err := embeddedProfiles.ReadFile("profiles/a100-40gb-mig.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bytes.Replace(huge, []byte("placementSize: 8"), []byte("placementSize: 4294967295"), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile(data)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Errorf("a parsed profile does not validate again: %v", err)
		}
	})
}

// FuzzParseFaults: any fault file either decodes or is refused; applying a decoded one to a mock node
// returns an error for GPUs, instances or Xids it does not have, never a panic.
func FuzzParseFaults(f *testing.F) {
	for _, seed := range []string{
		"gpus:\n- index: 1\n  lost: true\n",
		"gpus:\n- index: 0\n  fabricState: InProgress\n",
		"xids:\n- gpu: 0\n  xid: 79\n",
		"xids:\n- gpu: 0\n  xid: 31\n  gi: 1\n  ci: 0\n",
		"gpus:\n- index: 99\n  lost: true\n",
		"bogus: true\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		faults, err := ParseFaults(data)
		if err != nil {
			return
		}
		lib, err := New(Config{NodeName: "fuzz-node", Profile: "a100-40gb-mig"})
		if err != nil {
			t.Fatal(err)
		}
		lib.Init()
		defer lib.Shutdown()
		_ = lib.ApplyFaults(*faults)
	})
}
