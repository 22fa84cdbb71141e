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

// Package kubescheme builds the scheme the operator's components and tests read and write with.
package kubescheme

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// New returns a scheme with the Kubernetes built-in kinds and the resource.nvidia.com/v1beta1 kinds.
func New() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("add client-go kinds to scheme: %w", err)
	}
	if err := v1beta1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("add %s kinds to scheme: %w", v1beta1.GroupVersion, err)
	}
	return scheme, nil
}
