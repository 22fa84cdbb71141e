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

package metering

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestAPIClaimsRemembersAClaimDeletedBeforeItsIntervalIsPulled(t *testing.T) {
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "ml", UID: "uid-train", CreationTimestamp: metav1.NewTime(t0)},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "node-a", Device: "gpu-3"}},
		}}},
	}
	client := fake.NewClientset(claim)
	c := NewAPIClaims(client, clocktesting.NewFakeClock(t0.Add(time.Hour)), 744*time.Hour)
	if err := c.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := c.WatchingSince(); !got.Equal(t0.Add(time.Hour)) {
		t.Errorf("watching since %s, want the sync", got)
	}
	if err := client.ResourceV1().ResourceClaims("ml").Delete(t.Context(), "train", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := ClaimFacts{UID: "uid-train", Namespace: "ml", Name: "train", Created: t0, Devices: []string{"node-a/gpu-3"}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Gone from the API server, still known: from the watch.
		if _, err := client.ResourceV1().ResourceClaims("ml").Get(t.Context(), "train", metav1.GetOptions{}); err == nil && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		break
	}
	got, found, err := c.Claim(t.Context(), "ml", "train", "uid-train")
	if err != nil || !found {
		t.Fatalf("claim found %v, err %v: the deleted claim was forgotten", found, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claim (-want +got):\n%s", diff)
	}
	if _, found, _ := c.Claim(t.Context(), "ml", "train", "uid-forged"); found {
		t.Error("a claim UID never seen was found")
	}
}
