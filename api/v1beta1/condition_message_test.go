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

package v1beta1

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapMessage(t *testing.T) {
	cases := map[string]struct {
		msg   string
		limit int
		want  string
	}{
		"a short message is kept":          {msg: "3 of 4 IMEX daemons ready", limit: 100, want: "3 of 4 IMEX daemons ready"},
		"a message of exactly limit bytes": {msg: strings.Repeat("a", 40), limit: 40, want: strings.Repeat("a", 40)},
		"a long message is cut with a note": {
			msg: strings.Repeat("a", 100), limit: 40,
			want: strings.Repeat("a", 40-len("… (100 bytes left out)")) + "… (100 bytes left out)",
		},
		"the cut never splits a character": {
			msg: strings.Repeat("é", 50), limit: 40,
			want: strings.Repeat("é", 8) + "… (100 bytes left out)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := CapMessage(tc.msg, tc.limit)
			if got != tc.want {
				t.Errorf("CapMessage = %q, want %q", got, tc.want)
			}
			if len(got) > tc.limit || !utf8.ValidString(got) {
				t.Errorf("CapMessage = %d bytes (limit %d), valid UTF-8 %v", len(got), tc.limit, utf8.ValidString(got))
			}
		})
	}
}
