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

import "errors"

// ErrSimulatedCrash is what a CrashHook panics with.
var ErrSimulatedCrash = errors.New("simulated crash")

// CrashHook is asked (in tests) at the named points of a prepare whether the
// process crashes there. Production plugins leave it nil.
type CrashHook func(point string) bool

// At panics with ErrSimulatedCrash, as a crash would stop the call, when the
// hook says so; a nil hook never does.
func (h CrashHook) At(point string) {
	if h != nil && h(point) {
		panic(ErrSimulatedCrash)
	}
}
