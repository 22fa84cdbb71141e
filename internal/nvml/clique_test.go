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

import (
	"errors"
	"testing"
)

func fabric(uuid string, clique uint32, state uint8, status Return) FabricInfo {
	return FabricInfo{Supported: true, ClusterUUID: uuid, CliqueID: clique, State: state, Status: status}
}

func TestCliqueID(t *testing.T) {
	const u = "a3b1c2d4-0000-4e5f-8a9b-0123456789ab"
	done := fabric(u, 5, GPU_FABRIC_STATE_COMPLETED, SUCCESS)
	cases := map[string]struct {
		fabrics []FabricInfo
		want    string
		wantErr error
	}{
		"four GPUs of one tray agree": {
			fabrics: []FabricInfo{done, done, done, done},
			want:    u + ".5",
		},
		"GPUs without multi-node NVLink have no clique": {
			fabrics: []FabricInfo{{}, {}},
		},
		"no GPUs, no clique": {},
		"a completed registration without a cluster UUID is no clique": {
			fabrics: []FabricInfo{fabric("", 0, GPU_FABRIC_STATE_COMPLETED, SUCCESS)},
		},
		"one GPU still in progress": {
			fabrics: []FabricInfo{done, fabric(u, 5, GPU_FABRIC_STATE_IN_PROGRESS, SUCCESS)},
			wantErr: ErrFabricNotReady,
		},
		"a failed registration": {
			fabrics: []FabricInfo{fabric(u, 5, GPU_FABRIC_STATE_COMPLETED, ERROR_UNKNOWN)},
			wantErr: ErrFabricNotReady,
		},
		"one GPU in another clique": {
			fabrics: []FabricInfo{done, fabric(u, 6, GPU_FABRIC_STATE_COMPLETED, SUCCESS)},
			wantErr: ErrCliqueMismatch,
		},
		"one GPU in a clique and one without": {
			fabrics: []FabricInfo{done, {}},
			wantErr: ErrCliqueMismatch,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var gpus []GPUInfo
			for i, f := range tc.fabrics {
				gpus = append(gpus, GPUInfo{GPUFacts: GPUFacts{Index: i}, Fabric: f})
			}
			got, err := (&NodeInfo{GPUs: gpus}).CliqueID()
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("CliqueID error = %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("CliqueID = %q, want %q", got, tc.want)
			}
		})
	}
}
