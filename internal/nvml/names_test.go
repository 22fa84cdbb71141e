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

package nvml

import "testing"

func TestMigProfileName(t *testing.T) {
	const gib = 1024 * 1024 * 1024
	cases := map[string]struct {
		giProfile         int
		giSlices, ciSlice uint32
		totalMiB, migMiB  uint64
		want              string
	}{
		"A100 40GB smallest":              {GPU_INSTANCE_PROFILE_1_SLICE, 1, 1, 40960, 4864, "1g.5gb"},
		"A100 40GB with media engines":    {GPU_INSTANCE_PROFILE_1_SLICE_REV1, 1, 1, 40960, 4864, "1g.5gb+me"},
		"A100 40GB one slice, more mem":   {GPU_INSTANCE_PROFILE_1_SLICE_REV2, 1, 1, 40960, 9856, "1g.10gb"},
		"A100 40GB whole GPU":             {GPU_INSTANCE_PROFILE_7_SLICE, 7, 7, 40960, 40192, "7g.40gb"},
		"H100 80GB (81559 MiB) 3g":        {GPU_INSTANCE_PROFILE_3_SLICE, 3, 3, 81559, 40448, "3g.40gb"},
		"H100 80GB 1g.20gb":               {GPU_INSTANCE_PROFILE_1_SLICE_REV2, 1, 1, 81559, 20096, "1g.20gb"},
		"a 1-slice compute instance of 3": {GPU_INSTANCE_PROFILE_3_SLICE, 3, 1, 40960, 19968, "1c.3g.20gb"},
		"a profile without media engines": {GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, 1, 1, 40960, 4864, "1g.5gb-me"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := MigProfileName(tc.giProfile, tc.giSlices, tc.ciSlice, tc.totalMiB*gib/1024, tc.migMiB); got != tc.want {
				t.Errorf("MigProfileName = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNormalizePCIBusID(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"NVML's 8-digit domain and upper case": {"00000000:1B:00.0", "0000:1b:00.0"},
		"a GB200 domain":                       {"00000019:01:00.0", "0019:01:00.0"},
		"already normal":                       {"0000:9d:00.0", "0000:9d:00.0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := NormalizePCIBusID(tc.in); got != tc.want {
				t.Errorf("NormalizePCIBusID(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestClusterUUIDRoundTrip(t *testing.T) {
	s := "a3b1c2d4-0000-4e5f-8a9b-0123456789ab"
	b, err := ParseClusterUUID(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := FormatClusterUUID(b); got != s {
		t.Errorf("round trip = %q, want %q", got, s)
	}
	for _, bad := range []string{"", "a3b1c2d40000-4e5f-8a9b-0123456789ab-", "zzb1c2d4-0000-4e5f-8a9b-0123456789ab"} {
		if _, err := ParseClusterUUID(bad); err == nil {
			t.Errorf("ParseClusterUUID(%q) succeeded", bad)
		}
	}
	if got := CUDAVersionString(12090); got != "12.9" {
		t.Errorf("CUDAVersionString(12090) = %q", got)
	}
}
