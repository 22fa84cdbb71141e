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

package simcluster

import (
	"testing"

	componentversion "k8s.io/component-base/version"
)

// TestStampKubernetesVersion: the in-process components report the
// k8s.io/kubernetes version they are built from, not the placeholder of an
// unstamped build that kubectl and helm cannot parse.
func TestStampKubernetesVersion(t *testing.T) {
	want, err := KubernetesVersion()
	if err != nil {
		t.Fatal(err)
	}
	if err := stampKubernetesVersion(); err != nil {
		t.Fatal(err)
	}
	got := componentversion.Get()
	if got.GitVersion != want || got.Major != "1" || got.Minor != "37" || unstamped(got.GitVersion) {
		t.Errorf("version %+v, want gitVersion %s, major 1, minor 37", got, want)
	}
}
