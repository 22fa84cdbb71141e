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

package computedomain

import (
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// The deletion of a workload claim that held no allocation (Kubernetes 1.37.2 deletes and makes again the
// claims of a finished gang pod several times a second) brings no pass over the domain; the deletion of an
// allocated claim, one the informer may have missed, and every create and update do.
func TestWorkloadClaimEventsThatBringAPass(t *testing.T) {
	unallocated := &resourcev1.ResourceClaim{}
	allocated := &resourcev1.ResourceClaim{Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{}}}
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"unallocated claim deleted", deletedOnlyIfAllocated.Delete(event.DeleteEvent{Object: unallocated}), false},
		{"allocated claim deleted", deletedOnlyIfAllocated.Delete(event.DeleteEvent{Object: allocated}), true},
		{"claim deleted, final state unknown", deletedOnlyIfAllocated.Delete(event.DeleteEvent{Object: unallocated, DeleteStateUnknown: true}), true},
		{"unallocated claim made", deletedOnlyIfAllocated.Create(event.CreateEvent{Object: unallocated}), true},
		{"claim deallocated", deletedOnlyIfAllocated.Update(event.UpdateEvent{ObjectOld: allocated, ObjectNew: unallocated}), true},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: passes = %t, want %t", tc.name, tc.got, tc.want)
		}
	}
}
