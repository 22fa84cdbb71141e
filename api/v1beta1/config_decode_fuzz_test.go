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

package v1beta1

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeConfig runs every opaque config through the plugins' path: strict decode, Normalize, Validate,
// and, for MPS settings, the per-device memory limits. Nothing may panic, and a config that passes must
// encode to JSON that decodes, normalizes and validates again.
func FuzzDecodeConfig(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig"}`,
		`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}}`,
		`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"2Gi","defaultPerDevicePinnedMemoryLimit":{"0":"1Gi","GPU-1":"3Gi"}}}}`,
		`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"MPS"}}`,
		`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainChannelConfig","domainID":"8d3c5e2a-1b4f-4c2e-9a7d-0f6e5d4c3b2a","allocationMode":"All"}`,
		`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"ComputeDomainDaemonConfig","domainID":"8d3c5e2a-1b4f-4c2e-9a7d-0f6e5d4c3b2a"}`,
		`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":101}}}`,
		`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","Sharing":{}}`,
		`{"kind":"GpuConfig"}`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, err := DecodeConfig(raw)
		if err != nil {
			return
		}
		cfg.Normalize()
		if cfg.Validate() != nil {
			return
		}
		exerciseMPSLimits(cfg)
		out, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("marshal a valid %T: %v", cfg, err)
		}
		// Marshal drops apiVersion/kind of a typed object only when unset: put them back as a client would.
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		m["apiVersion"], m["kind"] = GroupVersion.String(), ConfigKind(cfg)
		out, _ = json.Marshal(m)
		again, err := DecodeConfig(out)
		if err != nil {
			t.Fatalf("a valid config does not decode again: %v\n%s", err, out)
		}
		again.Normalize()
		if err := again.Validate(); err != nil {
			t.Fatalf("a valid config is invalid after a round trip: %v\n%s", err, out)
		}
	})
}

// exerciseMPSLimits computes the MPS memory limits of a valid config for a two-GPU claim.
func exerciseMPSLimits(cfg DeviceConfig) {
	var mps *MpsConfig
	switch c := cfg.(type) {
	case *GpuConfig:
		if c.Sharing != nil {
			mps = c.Sharing.MpsConfig
		}
	case *MigDeviceConfig:
		if c.Sharing != nil {
			mps = c.Sharing.MpsConfig
		}
	}
	if mps != nil {
		_, _ = mps.PinnedMemoryLimits([]string{"GPU-0", "GPU-1"})
	}
}
