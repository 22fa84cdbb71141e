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

package app

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

func TestResourceOf(t *testing.T) {
	cases := map[string]string{
		"/apis/resource.nvidia.com/v1beta1/namespaces/ns/computedomains/x/status": "computedomains/status",
		"/apis/resource.nvidia.com/v1beta1/namespaces/ns/computedomainmembers":    "computedomainmembers",
		"/api/v1/nodes/gb200-r0-n00":              "nodes",
		"/api/v1/namespaces/ns/pods/p/status":     "pods/status",
		"/apis/resource.k8s.io/v1/resourceslices": "resourceslices",
		"/healthz": "/healthz",
	}
	for path, want := range cases {
		t.Run(path, func(t *testing.T) {
			if got := resourceOf(path); got != want {
				t.Errorf("resourceOf(%q) = %q, want %q", path, got, want)
			}
		})
	}
}

func TestAPIWriteCounterCountsWritesAndConflictsOfWrappedClients(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			w.WriteHeader(http.StatusConflict)
		}
	}))
	defer server.Close()
	counter := newAPIWriteCounter()
	cfg := counter.wrap("compute-domain-daemon@n1", &rest.Config{Host: server.URL})
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch} {
		req, _ := http.NewRequest(method, server.URL+"/api/v1/nodes/n1", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	got := counter.snapshot()
	want := writeCounts{
		writes:    map[string]map[string]int{"compute-domain-daemon@n1": {"POST nodes": 1, "PUT nodes": 1, "PATCH nodes": 1}},
		conflicts: map[string]int{"compute-domain-daemon@n1 PUT nodes": 1},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(writeCounts{})); diff != "" {
		t.Errorf("counts mismatch (-want +got):\n%s", diff)
	}
	counter.reset()
	if diff := cmp.Diff(writeCounts{writes: map[string]map[string]int{}, conflicts: map[string]int{}}, counter.snapshot(), cmp.AllowUnexported(writeCounts{})); diff != "" {
		t.Errorf("after reset (-want +got):\n%s", diff)
	}
}
