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

package gpu

import "testing"

func TestMigDeviceName(t *testing.T) {
	cases := map[string]struct {
		minor, giProfile, start int
		profile                 string
		want                    string
	}{
		"the compat example":                      {0, 19, 0, "1g.5gb", "gpu-0-mig-1g5gb-19-0"},
		"a media-extension profile stays a label": {3, 20, 6, "1g.5gb+me", "gpu-3-mig-1g5gb-me-20-6"},
		"a large profile on a later GPU":          {7, 0, 0, "7g.80gb", "gpu-7-mig-7g80gb-0-0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := migDeviceName(tc.minor, tc.profile, tc.giProfile, tc.start); got != tc.want {
				t.Errorf("migDeviceName = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSemver(t *testing.T) {
	cases := map[string]struct {
		in, want string
		wantErr  bool
	}{
		"driver version with a leading zero": {in: "580.65.06", want: "580.65.6"},
		"compute capability gets a patch":    {in: "9.0", want: "9.0.0"},
		"CUDA version":                       {in: "12.9", want: "12.9.0"},
		"a single number":                    {in: "550", want: "550.0.0"},
		"four parts are refused":             {in: "1.2.3.4", wantErr: true},
		"letters are refused":                {in: "1.2a", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := semver(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("semver(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("semver(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
