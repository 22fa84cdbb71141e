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

//go:build !crashtest

package draplugin

import "testing"

// TestProcessCrashHookIsNilInANormalBuild: without -tags crashtest the
// environment of the crash harness changes nothing.
func TestProcessCrashHookIsNilInANormalBuild(t *testing.T) {
	t.Setenv("CDO_CRASH_AT", "1")
	t.Setenv("CDO_CRASH_LOG", t.TempDir()+"/hits")
	if ProcessCrashHook() != nil {
		t.Fatal("ProcessCrashHook() is not nil in a build without -tags crashtest")
	}
}
