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

package tenants

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// DecodeFixture reads a demo manifest of the repository at root.
func DecodeFixture(root, manifest string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(filepath.Join(root, manifest))
	if err != nil {
		return nil, err
	}
	objs, err := simcluster.DecodeManifests(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", manifest, err)
	}
	return objs, nil
}

// Rename gives a fixture's Job (and its claim templates) a new name, so one manifest makes several jobs in one
// namespace; edit, when set, changes the objects further.
func Rename(objs []*unstructured.Unstructured, name string, edit func(o *unstructured.Unstructured)) error {
	templates := map[string]string{}
	for _, o := range objs {
		if o.GetKind() == "ResourceClaimTemplate" {
			templates[o.GetName()] = name + "-" + o.GetName()
			o.SetName(templates[o.GetName()])
		}
	}
	for _, o := range objs {
		if o.GetKind() != "Job" {
			continue
		}
		o.SetName(name)
		claims, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "resourceClaims")
		if err != nil {
			return fmt.Errorf("job %s: %w", name, err)
		}
		for _, c := range claims {
			m, ok := c.(map[string]any)
			if !ok {
				return fmt.Errorf("job %s: resourceClaims entry %v is not an object", name, c)
			}
			if t, ok := m["resourceClaimTemplateName"].(string); ok && templates[t] != "" {
				m["resourceClaimTemplateName"] = templates[t]
			}
		}
		if claims != nil {
			if err := unstructured.SetNestedSlice(o.Object, claims, "spec", "template", "spec", "resourceClaims"); err != nil {
				return fmt.Errorf("job %s: %w", name, err)
			}
		}
	}
	for _, o := range objs {
		if edit != nil {
			edit(o)
		}
	}
	return nil
}
