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

package featuregates

import (
	"strings"
	"testing"
)

var known = []Gate{{Name: "MPSSupport", Default: true}, {Name: "DynamicMIG", Default: false}}

func TestParse(t *testing.T) {
	cases := map[string]struct {
		value   string
		want    string
		wantErr string
	}{
		"empty keeps the defaults":             {value: "", want: "DynamicMIG=false,MPSSupport=true"},
		"a gate is turned on, spaces are fine": {value: " DynamicMIG = true ", want: "DynamicMIG=true,MPSSupport=true"},
		"a default-on gate is turned off":      {value: "MPSSupport=false,DynamicMIG=true", want: "DynamicMIG=true,MPSSupport=false"},
		"an unknown gate names the known ones": {value: "TimeSlicing=true", wantErr: `unknown gate "TimeSlicing" (allowed: DynamicMIG, MPSSupport)`},
		"a value that is no bool":              {value: "MPSSupport=yes please", wantErr: `MPSSupport="yes please": want true or false`},
		"a gate without a value":               {value: "MPSSupport", wantErr: "want <gate>=true|false"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(known, tc.value)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) error = %v, want one containing %q", tc.value, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("Parse(%q) = %s, want %s", tc.value, got, tc.want)
			}
		})
	}
}

func TestEnabledPanicsOnAGateTheBinaryDoesNotKnow(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Enabled of an unknown gate did not panic")
		}
	}()
	Defaults(known).Enabled("Nope")
}
