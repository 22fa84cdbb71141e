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

package topologyview

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
)

// asObjects are pointers to items, as client objects.
func asObjects[T any, PT interface {
	*T
	client.Object
}](items []T) []client.Object {
	out := make([]client.Object, len(items))
	for i := range items {
		out[i] = PT(&items[i])
	}
	return out
}

// snapshotObjects are every object of s.
func snapshotObjects(s *Snapshot) []client.Object {
	return slices.Concat(asObjects(s.Nodes), asObjects(s.ResourceSlices), asObjects(s.ResourceClaims), asObjects(s.Pods),
		asObjects(s.ComputeDomains), asObjects(s.IMEXNodes), asObjects(s.Events))
}

func TestFetchListsWhatTheViewsNeedAndOnlyTheDescribedNamespacesEvents(t *testing.T) {
	want := multiCliqueCluster()
	other := blockedCluster()
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	objs := append(snapshotObjects(want), asObjects(other.Events)...)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()

	got, err := Fetch(context.Background(), c, FetchOptions{EventsNamespace: "big"})
	if err != nil {
		t.Fatal(err)
	}
	// The views built from what Fetch listed are the views of the objects themselves.
	wantRacks, _ := BuildRacks(want, RacksOptions{})
	gotRacks, err := BuildRacks(got, RacksOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantRacks, gotRacks); diff != "" {
		t.Errorf("racks from fetched objects (-want +got):\n%s", diff)
	}
	wantDesc, _ := Describe(want, "big", "llm")
	gotDesc, err := Describe(got, "big", "llm")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantDesc, gotDesc); diff != "" {
		t.Errorf("description from fetched objects (-want +got):\n%s", diff)
	}
	if len(got.Events) != len(want.Events) {
		t.Errorf("fetched %d events, want the %d of namespace big alone", len(got.Events), len(want.Events))
	}
}

func TestTraysAndCliquesSortNumbersAsNumbers(t *testing.T) {
	cases := map[string]struct {
		a, b string
		want int
	}{
		"node-2 before node-10":            {a: "node-2", b: "node-10", want: -1},
		"equal names":                      {a: "rack0-3", b: "rack0-3", want: 0},
		"letters decide before digits run": {a: "a-10", b: "b-2", want: -1},
		"leading zeros compare by value":   {a: "n-007", b: "n-8", want: -1},
		"a prefix sorts first":             {a: "rack", b: "rack-1", want: -1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := naturalCompare(tc.a, tc.b); got != tc.want {
				t.Errorf("naturalCompare(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
			if got := naturalCompare(tc.b, tc.a); got != -tc.want {
				t.Errorf("naturalCompare(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
			}
		})
	}
}

func TestHolderKeysRunPastZ(t *testing.T) {
	got := []string{holderKey(0), holderKey(25), holderKey(26), holderKey(27), holderKey(701), holderKey(702)}
	want := []string{"A", "Z", "AA", "AB", "ZZ", "AAA"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("holder keys (-want +got):\n%s", diff)
	}
}

// The chart's read-only ClusterRole grants ReadResources; Fetch must list nothing else.
func TestFetchListsOnlyTheReadResources(t *testing.T) {
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			gvk, err := apiutil.GVKForObject(list, scheme)
			if err != nil {
				return err
			}
			listed = append(listed, gvk.Group+"/"+strings.ToLower(strings.TrimSuffix(gvk.Kind, "List"))+"s")
			return c.List(ctx, list, opts...)
		},
	})
	if _, err := Fetch(context.Background(), c, FetchOptions{EventsNamespace: "team-a"}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	if diff := cmp.Diff(ReadResources, listed); diff != "" {
		t.Errorf("resources Fetch lists (-ReadResources +listed):\n%s", diff)
	}
}
