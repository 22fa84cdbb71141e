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
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// lister answers discovery for one group version.
type lister struct {
	gv   string
	list *metav1.APIResourceList
	err  error
}

func (l lister) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	if gv != l.gv {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
	}
	return l.list, l.err
}

func TestServed(t *testing.T) {
	gv := "scheduling.k8s.io/v1beta1"
	cases := map[string]struct {
		lister  lister
		want    bool
		wantErr bool
	}{
		"a 1.37 cluster with the Workload API serves podgroups": {
			lister: lister{gv: gv, list: &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "workloads"}, {Name: "podgroups"}, {Name: "podgroups/status"}}}},
			want:   true,
		},
		"a cluster without the group version (GenericWorkload off) answers 404": {
			lister: lister{gv: "other/v1"},
		},
		"a group version without podgroups does not serve them": {
			lister: lister{gv: gv, list: &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "workloads"}}}},
		},
		"another failure is an error, not an answer": {
			lister:  lister{gv: gv, err: errors.New("connection refused")},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Served(tc.lister)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Served error %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("Served %v, want %v", got, tc.want)
			}
		})
	}
}
