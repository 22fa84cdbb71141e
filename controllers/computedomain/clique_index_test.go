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
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func nodeMeta(name, clique string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if clique != "" {
		m.Labels = map[string]string{PlacementTopologyKey: clique}
	}
	return m
}

// TestCliqueIndexFollowsNodeEvents: the sizes follow nodes added, relabeled, unlabeled and deleted (also
// when the informer hands over a tombstone), and are withheld until the handler has synced.
func TestCliqueIndexFollowsNodeEvents(t *testing.T) {
	x := newCliqueIndex()
	x.observe(nodeMeta("a", "c1"))
	if _, ok := x.Sizes(); ok {
		t.Fatal("sizes served before the handler synced")
	}
	x.synced = func() bool { return true }
	steps := []struct {
		name  string
		event func()
		want  map[string]int
	}{
		{"three nodes in two cliques, one without", func() {
			x.observe(nodeMeta("b", "c1"))
			x.observe(nodeMeta("c", "c2"))
			x.observe(nodeMeta("d", ""))
		}, map[string]int{"c1": 2, "c2": 1}},
		{"an update that changes nothing counts once", func() { x.observe(nodeMeta("a", "c1")) }, map[string]int{"c1": 2, "c2": 1}},
		{"a node moved to another clique", func() { x.observe(nodeMeta("b", "c2")) }, map[string]int{"c1": 1, "c2": 2}},
		{"a node that lost its label", func() { x.observe(nodeMeta("a", "")) }, map[string]int{"c2": 2}},
		{"a node without a label labeled", func() { x.observe(nodeMeta("d", "c3")) }, map[string]int{"c2": 2, "c3": 1}},
		{"a deleted node", func() { x.forget(nodeMeta("c", "c2")) }, map[string]int{"c2": 1, "c3": 1}},
		{"a deleted node seen only as a tombstone", func() {
			x.forget(toolscache.DeletedFinalStateUnknown{Key: "d", Obj: nodeMeta("d", "c3")})
		}, map[string]int{"c2": 1}},
		{"a second delete of the same node", func() { x.forget(nodeMeta("d", "c3")) }, map[string]int{"c2": 1}},
	}
	for _, s := range steps {
		s.event()
		got, ok := x.Sizes()
		if !ok || !maps.Equal(got, s.want) {
			t.Fatalf("%s: sizes %v (served %v), want %v", s.name, got, ok, s.want)
		}
	}
	got, _ := x.Sizes()
	got["c2"] = 99
	if again, _ := x.Sizes(); again["c2"] != 1 {
		t.Error("Sizes hands out the index's own map")
	}
}
