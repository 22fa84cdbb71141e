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

package identity

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromEnv(t *testing.T) {
	full := Identity{DomainUID: "uid-1", DomainName: "train", DomainNamespace: "team-a", CliqueID: "c.1", ConfigDir: "/imex"}
	cases := map[string]struct {
		env     []string
		want    Identity
		wantErr string
	}{
		"what the plugin injects reads back unchanged": {
			env:  full.Env(),
			want: full,
		},
		"no clique and no config dir: empty clique, the container default": {
			env:  []string{"COMPUTE_DOMAIN_UUID=u", "COMPUTE_DOMAIN_NAME=n", "COMPUTE_DOMAIN_NAMESPACE=ns"},
			want: Identity{DomainUID: "u", DomainName: "n", DomainNamespace: "ns", ConfigDir: ContainerConfigDir},
		},
		"a daemon started without its claim names what is missing": {
			env:     []string{"COMPUTE_DOMAIN_NAME=n"},
			wantErr: "environment variable COMPUTE_DOMAIN_UUID must be set (the compute-domain kubelet plugin injects it with the daemon claim)\nenvironment variable COMPUTE_DOMAIN_NAMESPACE must be set (the compute-domain kubelet plugin injects it with the daemon claim)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := FromEnv(EnvMap(tc.env))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
		})
	}
}
