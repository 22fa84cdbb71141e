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
