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

package draplugin

import "testing"

func TestCrashHookPanicsOnlyWhereItSays(t *testing.T) {
	cases := map[string]struct {
		hook      CrashHook
		wantPanic bool
	}{
		"a production plugin has no hook":  {hook: nil},
		"the hook names another point":     {hook: func(p string) bool { return p == "other" }},
		"the hook names this point: crash": {hook: func(p string) bool { return p == "cdi-written" }, wantPanic: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got any
			func() {
				defer func() { got = recover() }()
				tc.hook.At("cdi-written")
			}()
			if tc.wantPanic && got != ErrSimulatedCrash { //nolint:errorlint // the panic value itself, never wrapped
				t.Errorf("recovered %v, want %v", got, ErrSimulatedCrash)
			}
			if !tc.wantPanic && got != nil {
				t.Errorf("panicked with %v", got)
			}
		})
	}
}
