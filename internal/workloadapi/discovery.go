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

package workloadapi

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceLister is the part of client-go's discovery client that Served needs.
type ResourceLister interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// Served tells whether the API server serves PodGroups at GroupVersion: a 1.37 kube-apiserver does with
// --runtime-config=scheduling.k8s.io/v1beta1=true and the GenericWorkload gate. Whether it keeps a PodGroup's
// topology constraint (the TopologyAwareWorkloadScheduling gate) shows only on a stored PodGroup (Observe);
// whether the scheduler honors the gang and the constraint does not show in the API at all.
func Served(d ResourceLister) (bool, error) {
	return served(d, GroupVersion.String(), Resource)
}

// CompositeServed tells whether the API server serves CompositePodGroups at CompositeGroupVersion: a 1.37
// kube-apiserver does with --runtime-config=scheduling.k8s.io/v1alpha3=true and the CompositePodGroup gate (which
// needs GenericWorkload and TopologyAwareWorkloadScheduling). Whether the scheduler runs with the gate too does
// not show in the API: a scheduler without it places each slice PodGroup as its own gang, with no gang over them.
func CompositeServed(d ResourceLister) (bool, error) {
	return served(d, CompositeGroupVersion.String(), CompositeResource)
}

func served(d ResourceLister, groupVersion, resource string) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", groupVersion, err)
	}
	if list == nil {
		return false, errors.New("discover " + groupVersion + ": empty answer")
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}
