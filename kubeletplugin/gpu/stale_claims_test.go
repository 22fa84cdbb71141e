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
	"context"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
)

type fakeClaims map[string]types.UID // "ns/name" → UID

func (f fakeClaims) GetResourceClaim(_ context.Context, ns, name string) (*resourceapi.ResourceClaim, error) {
	uid, ok := f[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(resourceapi.Resource("resourceclaims"), name)
	}
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}, nil
}

func TestCleanupStaleClaims(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	claims := fakeClaims{"default/alive": "uid-alive", "default/recreated": "uid-new"}
	d := e.mustDriver(withClaims(claims))
	for _, c := range []*resourceapi.ResourceClaim{
		utiltesting.MakeResourceClaim("alive", "default").UID("uid-alive").Device("gpu", testDriver, testNode, "gpu-0").Obj(),
		utiltesting.MakeResourceClaim("deleted", "default").UID("uid-deleted").Device("gpu", testDriver, testNode, "gpu-1").Obj(),
		utiltesting.MakeResourceClaim("recreated", "default").UID("uid-old").Device("gpu", testDriver, testNode, "gpu-2").Obj(),
	} {
		if _, err := prepareOne(t, d, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CleanupStaleClaims(testContext(t)); err != nil {
		t.Fatal(err)
	}
	var left []string
	for uid := range loadState(t, e).Claims {
		left = append(left, uid)
	}
	if strings.Join(left, ",") != "uid-alive" {
		t.Errorf("claims left %v, want [uid-alive]", left)
	}
	if got := specFiles(t, e); strings.Join(got, ",") != "uid-alive" {
		t.Errorf("CDI specs left %v", got)
	}
}
