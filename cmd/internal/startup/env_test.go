package startup

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEnvLookup(t *testing.T) {
	type result struct {
		Value string
		Found bool
	}
	cases := map[string]struct {
		env  map[string]string
		key  string
		want result
	}{
		"a set variable":        {env: map[string]string{"NODE_NAME": "tray-1"}, key: "NODE_NAME", want: result{"tray-1", true}},
		"a variable set empty":  {env: map[string]string{"NODE_NAME": ""}, key: "NODE_NAME", want: result{"", true}},
		"an unset variable":     {env: map[string]string{"NODE_NAME": "tray-1"}, key: "POD_IP", want: result{}},
		"no environment at all": {env: nil, key: "NODE_NAME", want: result{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v, ok := EnvLookup(tc.env)(tc.key)
			if diff := cmp.Diff(tc.want, result{v, ok}); diff != "" {
				t.Errorf("lookup %s (-want +got):\n%s", tc.key, diff)
			}
		})
	}
}
