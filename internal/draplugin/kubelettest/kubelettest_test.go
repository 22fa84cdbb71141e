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

package kubelettest

import (
	"context"
	"errors"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	Eventually(t, "the third call", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Errorf("condition called %d times, want 3", calls)
	}
}

// recorder is a testing.TB that records failures instead of ending the test.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.errors = append(r.errors, "error") }
func (r *recorder) Fatal(...any)          { r.errors = append(r.errors, "fatal") }
func (r *recorder) Fatalf(string, ...any) { r.errors = append(r.errors, "fatal") }

func TestReturnedFailsOnAnError(t *testing.T) {
	cases := map[string]struct {
		result     error
		wantErrors int
	}{
		"a clean return":      {result: nil, wantErrors: 0},
		"a return with error": {result: errors.New("boom"), wantErrors: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			done := make(chan error, 1)
			done <- tc.result
			r := &recorder{TB: t}
			Returned(r, done)
			if len(r.errors) != tc.wantErrors {
				t.Errorf("failures %v, want %d", r.errors, tc.wantErrors)
			}
		})
	}
}

func TestPublishedDevicesCountsEverySlice(t *testing.T) {
	slice := func(name string, devices ...string) *resourceapi.ResourceSlice {
		s := &resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, d := range devices {
			s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: d})
		}
		return s
	}
	client := fake.NewClientset(slice("a", "gpu-0", "gpu-1"), slice("b", "gpu-2"))
	PublishedDevices(context.Background(), t, client, 3)
}
