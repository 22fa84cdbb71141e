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

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

func TestTimeSliceIntervalInt(t *testing.T) {
	cases := map[string]struct {
		interval v1beta1.TimeSliceInterval
		want     int
		wantErr  string
	}{
		"Default is the driver's 0": {interval: v1beta1.DefaultTimeSlice, want: 0},
		"Short is 1":                {interval: v1beta1.ShortTimeSlice, want: 1},
		"Medium is 2":               {interval: v1beta1.MediumTimeSlice, want: 2},
		"Long is 3":                 {interval: v1beta1.LongTimeSlice, want: 3},
		"an unknown interval names the supported values": {
			interval: "long",
			wantErr:  `time slice interval "long": supported values: "Default", "Short", "Medium", "Long"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.interval.Int()
			if diff := cmp.Diff(tc.wantErr, errText(err)); diff != "" {
				t.Errorf("Int() error (-want +got):\n%s", diff)
			}
			if got != tc.want {
				t.Errorf("Int() = %d, want %d", got, tc.want)
			}
		})
	}
}
