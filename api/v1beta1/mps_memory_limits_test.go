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

package v1beta1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func TestPinnedMemoryLimits(t *testing.T) {
	uuids := []string{"GPU-a", "GPU-b", "GPU-c"}
	q := resource.MustParse
	cases := map[string]struct {
		mps     *v1beta1.MpsConfig
		want    map[string]resource.Quantity
		wantErr string
	}{
		"no MPS config sets no limit": {},
		"an MPS config without limits sets no limit": {
			mps: utiltesting.MakeMpsConfig().ActiveThreadPercentage(50).Obj(),
		},
		"the default limit applies to every device": {
			mps:  utiltesting.MakeMpsConfig().PinnedMemoryLimit("4Gi").Obj(),
			want: map[string]resource.Quantity{"GPU-a": q("4Gi"), "GPU-b": q("4Gi"), "GPU-c": q("4Gi")},
		},
		"per-device limits by index and by UUID override the default": {
			mps: utiltesting.MakeMpsConfig().PinnedMemoryLimit("4Gi").
				PerDevicePinnedMemoryLimit("0", "1Gi").PerDevicePinnedMemoryLimit("GPU-c", "2Gi").Obj(),
			want: map[string]resource.Quantity{"GPU-a": q("1Gi"), "GPU-b": q("4Gi"), "GPU-c": q("2Gi")},
		},
		"per-device limits without a default limit only their devices": {
			mps:  utiltesting.MakeMpsConfig().PerDevicePinnedMemoryLimit("2", "512Mi").Obj(),
			want: map[string]resource.Quantity{"GPU-c": q("512Mi")},
		},
		"an index past the claim's devices names the valid range": {
			mps:     utiltesting.MakeMpsConfig().PerDevicePinnedMemoryLimit("3", "1Gi").Obj(),
			wantErr: `mpsConfig.defaultPerDevicePinnedMemoryLimit[3]: device index out of range: the claim has 3 device(s), indices 0..2`,
		},
		"a UUID of another device names the claim's devices": {
			mps:     utiltesting.MakeMpsConfig().PerDevicePinnedMemoryLimit("GPU-z", "1Gi").Obj(),
			wantErr: `mpsConfig.defaultPerDevicePinnedMemoryLimit[GPU-z]: no device of the claim has this UUID; the claim's devices: "GPU-a", "GPU-b", "GPU-c"`,
		},
		"a key that is neither index nor UUID is rejected": {
			mps: utiltesting.MakeMpsConfig().PerDevicePinnedMemoryLimit("first", "1Gi").Obj(),
			wantErr: `mpsConfig.defaultPerDevicePinnedMemoryLimit[first]: ` +
				`must be a device index (e.g. "0") or a device UUID (e.g. "GPU-…", "MIG-…")`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.mps.PinnedMemoryLimits(uuids)
			if diff := cmp.Diff(tc.wantErr, errText(err)); diff != "" {
				t.Errorf("PinnedMemoryLimits() error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got, quantityEqual); diff != "" {
				t.Errorf("PinnedMemoryLimits() (-want +got):\n%s", diff)
			}
		})
	}
}
