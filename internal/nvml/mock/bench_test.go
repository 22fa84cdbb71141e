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
