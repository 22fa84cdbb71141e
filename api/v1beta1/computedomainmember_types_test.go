package v1beta1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestComputeDomainMemberName(t *testing.T) {
	long := strings.Repeat("n", 260)
	cases := map[string]struct {
		node    string
		uid     types.UID
		want    string
		wantLen int
	}{
		"a short node name keeps its name and the uid's first 8 characters": {
			node: "gb200-r1-n3",
			uid:  "0f3c9a7e-1111-2222-3333-444455556666",
			want: "gb200-r1-n3-0f3c9a7e",
		},
		"a uid shorter than 8 characters is used whole": {
			node: "n1",
			uid:  "abc",
			want: "n1-abc",
		},
		"a node name too long for a name is shortened with a hash and still ends in the uid": {
			node:    long,
			uid:     "0f3c9a7e-1111",
			wantLen: 253,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ComputeDomainMemberName(tc.node, tc.uid)
			if tc.want != "" {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("name (-want +got):\n%s", diff)
				}
				return
			}
			if len(got) != tc.wantLen || !strings.HasSuffix(got, "-0f3c9a7e") {
				t.Errorf("name %q (len %d): want len %d ending in -0f3c9a7e", got, len(got), tc.wantLen)
			}
			if other := ComputeDomainMemberName(long[:259]+"m", tc.uid); other == got {
				t.Errorf("two long node names that differ map to the same member name %q", got)
			}
		})
	}
}
