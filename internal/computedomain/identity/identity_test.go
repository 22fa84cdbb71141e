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
