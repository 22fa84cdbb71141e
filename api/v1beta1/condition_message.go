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
	"fmt"
	"unicode/utf8"
)

// MaxConditionMessageBytes is the longest message a metav1.Condition may hold (its CRD schema's maxLength). A
// status with a longer one is rejected whole, so every message we write goes through CapMessage.
const MaxConditionMessageBytes = 32768

// CapMessage returns msg when it has at most limit bytes, and otherwise its first bytes, cut at a character
// boundary, followed by a note saying how much was left out; the result has at most limit bytes.
func CapMessage(msg string, limit int) string {
	if len(msg) <= limit {
		return msg
	}
	note := fmt.Sprintf("… (%d bytes left out)", len(msg))
	keep := max(limit-len(note), 0)
	for keep > 0 && !utf8.RuneStart(msg[keep]) {
		keep--
	}
	out := msg[:keep] + note
	if len(out) > limit {
		return out[:0]
	}
	return out
}
