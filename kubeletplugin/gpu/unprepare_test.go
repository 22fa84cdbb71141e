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

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

func TestUnprepareSucceedsOnALostGPU(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	claim := utiltesting.MakeResourceClaim("ts", "default").UID("uid-ts").Device("gpu", testDriver, testNode, "gpu-4").Config(resourceapi.AllocationConfigSourceClaim, testDriver, tsShort).Obj()
	if _, err := prepareOne(t, d, claim); err != nil {
		t.Fatal(err)
	}
	if err := e.lib.SetGPULost(4, true); err != nil {
		t.Fatal(err)
	}
	if res := unprepare(t, d, "uid-ts"); res["uid-ts"] != nil {
		t.Errorf("unprepare on a lost GPU: %v", res["uid-ts"])
	}
	if n := len(loadState(t, e).Claims); n != 0 {
		t.Errorf("%d claims still recorded", n)
	}
}
