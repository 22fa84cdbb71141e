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
	"context"
	"testing"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

// BenchmarkGB200NodeStartAndDiscover is the cost of one simulated GB200 tray
// coming up (New, Init, Discover, clique), which the simulated cluster pays
// per node.
func BenchmarkGB200NodeStartAndDiscover(b *testing.B) {
	p, err := LoadProfile("gb200-nvl72")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		m, err := New(Config{NodeName: "sim-r00-n00", ProfileSpec: p})
		if err != nil {
			b.Fatal(err)
		}
		m.Init()
		info, err := nvml.Discover(context.Background(), m)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := info.CliqueID(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkA100MIGDiscover is one Discover of a DGX A100 with static MIG
// layouts (8 GPUs, 23 MIG devices).
func BenchmarkA100MIGDiscover(b *testing.B) {
	m, err := New(Config{NodeName: "node-a", Profile: "a100-40gb-mig"})
	if err != nil {
		b.Fatal(err)
	}
	m.Init()
	for b.Loop() {
		if _, err := nvml.Discover(context.Background(), m); err != nil {
			b.Fatal(err)
		}
	}
}
