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
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// apiWriteCounter counts the API writes (POST, PUT, PATCH, DELETE) and the
// HTTP 409 answers of the components whose client configuration it wraps
// (simcluster.Config.ComponentConfig), by component.
type apiWriteCounter struct {
	mu sync.Mutex
	// writes by component name (with "@<node>"), then "VERB resource".
	writes map[string]map[string]int
	// conflicts by "<component> VERB resource".
	conflicts map[string]int
}

func newAPIWriteCounter() *apiWriteCounter {
	return &apiWriteCounter{writes: map[string]map[string]int{}, conflicts: map[string]int{}}
}

// wrap is a simcluster.Config.ComponentConfig.
func (w *apiWriteCounter) wrap(component string, cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return countingTransport{next: rt, component: component, counter: w}
	})
	return cfg
}

// reset forgets every count (start of a measured interval).
func (w *apiWriteCounter) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = map[string]map[string]int{}
	w.conflicts = map[string]int{}
}

// writeCounts is a snapshot of the counts.
type writeCounts struct {
	writes    map[string]map[string]int
	conflicts map[string]int
}

func (w *apiWriteCounter) snapshot() writeCounts {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := writeCounts{writes: map[string]map[string]int{}, conflicts: map[string]int{}}
	for comp, byCall := range w.writes {
		out.writes[comp] = map[string]int{}
		for call, n := range byCall {
			out.writes[comp][call] = n
		}
	}
	for comp, n := range w.conflicts {
		out.conflicts[comp] = n
	}
	return out
}

func (w *apiWriteCounter) record(component, call string, conflict bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.writes[component] == nil {
		w.writes[component] = map[string]int{}
	}
	w.writes[component][call]++
	if conflict {
		w.conflicts[component+" "+call]++
	}
}

type countingTransport struct {
	next      http.RoundTripper
	component string
	counter   *apiWriteCounter
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		t.counter.record(t.component, req.Method+" "+resourceOf(req.URL.Path), err == nil && resp.StatusCode == http.StatusConflict)
	}
	return resp, err
}

// resourceOf names the resource (and subresource) of an API path:
// /apis/resource.nvidia.com/v1beta1/namespaces/ns/computedomains/x/status is
// "computedomains/status".
func resourceOf(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:]
	default:
		return path
	}
	if len(segs) >= 3 && segs[0] == "namespaces" {
		segs = segs[2:]
	}
	switch {
	case len(segs) == 0:
		return path
	case len(segs) >= 3:
		return segs[0] + "/" + segs[2]
	}
	return segs[0]
}

// componentKind drops the node of a per-node component name.
func componentKind(component string) string {
	kind, _, _ := strings.Cut(component, "@")
	return kind
}
