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

package app

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
)

func TestFlags(t *testing.T) {
	cases := map[string]struct {
		args    []string
		want    computedomain.Config
		wantErr string
	}{
		"the required flags and defaults for everything else": {
			args: []string{"--namespace=nvidia-dra"},
			want: computedomain.Config{
				OperatorNamespace: "nvidia-dra", DriverName: "compute-domain.nvidia.com",
				ChannelDeviceClass: "compute-domain-default-channel.nvidia.com",
				MaxNodesPerClique:  18, MaxChannels: 2048, StatusWriteInterval: 500 * time.Millisecond,
				GPUDriverName: "gpu.nvidia.com",
			},
		},
		"an isolated install with its own driver and classes": {
			args: []string{"--namespace=sim", "--driver-name=cd.sim.example.com",
				"--channel-device-class=ch.sim", "--max-nodes-per-clique=4", "--clique-placement-fallback", "--gpu-driver-name=gpu.sim.example.com"},
			want: computedomain.Config{
				OperatorNamespace: "sim", DriverName: "cd.sim.example.com",
				ChannelDeviceClass: "ch.sim",
				MaxNodesPerClique:  4, MaxChannels: 2048, StatusWriteInterval: 500 * time.Millisecond,
				CliquePlacement: true, GPUDriverName: "gpu.sim.example.com",
			},
		},
		"no namespace": {args: []string{}, wantErr: "--namespace: must be set"},
		"a flag of the retired per-domain IMEX mode": {args: []string{"--namespace=a", "--imex-mode=Domain"}, wantErr: "flag provided but not defined: -imex-mode"},
		"a stray argument":                           {args: []string{"--namespace=a", "extra"}, wantErr: "unexpected arguments"},
		"zero workers":                               {args: []string{"--namespace=a", "--workers=0"}, wantErr: "--workers: 0"},
		"a zero-node clique cap":                     {args: []string{"--namespace=a", "--max-nodes-per-clique=0"}, wantErr: "--max-nodes-per-clique: 0"},
	}
	t.Setenv("POD_NAMESPACE", "")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := parse(tc.args)
			var cfg computedomain.Config
			if err == nil {
				cfg, err = o.controllerConfig()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cfg); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}
