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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Snapshot is the cluster state the view is built from: plain Kubernetes objects, listed once.
type Snapshot struct {
	Nodes          []corev1.Node
	ResourceSlices []resourceapi.ResourceSlice
	ResourceClaims []resourceapi.ResourceClaim
	Pods           []corev1.Pod
	ComputeDomains []v1beta1.ComputeDomain
	IMEXNodes      []v1beta1.IMEXNode
	// Events are the events of the described domain's namespace; racks needs none.
	Events []corev1.Event
}

// ReadResources are the resources Fetch lists, as "group/resource" (core resources with the empty group): the
// rights, get and list, a user of the views needs. The chart's topology-view ClusterRole grants exactly these.
var ReadResources = []string{
	"/events",
	"/nodes",
	"/pods",
	"resource.k8s.io/resourceclaims",
	"resource.k8s.io/resourceslices",
	"resource.nvidia.com/computedomains",
	"resource.nvidia.com/imexnodes",
}

// FetchOptions says what Fetch lists besides the cluster-wide objects.
type FetchOptions struct {
	// EventsNamespace, when set, is the namespace whose events are listed (for describe).
	EventsNamespace string
}

// Fetch lists the objects of a Snapshot through r, read-only. Every list is cluster-wide (the view is of the
// whole cluster), except events.
func Fetch(ctx context.Context, r client.Reader, opts FetchOptions) (*Snapshot, error) {
	var (
		nodes   corev1.NodeList
		slices  resourceapi.ResourceSliceList
		claims  resourceapi.ResourceClaimList
		pods    corev1.PodList
		domains v1beta1.ComputeDomainList
		imex    v1beta1.IMEXNodeList
	)
	lists := []struct {
		what string
		list client.ObjectList
	}{
		{"nodes", &nodes},
		{"resourceslices", &slices},
		{"resourceclaims", &claims},
		{"pods", &pods},
		{"computedomains", &domains},
		{"imexnodes", &imex},
	}
	for _, l := range lists {
		if err := r.List(ctx, l.list); err != nil {
			return nil, fmt.Errorf("list %s: %w", l.what, err)
		}
	}
	s := &Snapshot{
		Nodes:          nodes.Items,
		ResourceSlices: slices.Items,
		ResourceClaims: claims.Items,
		Pods:           pods.Items,
		ComputeDomains: domains.Items,
		IMEXNodes:      imex.Items,
	}
	if opts.EventsNamespace != "" {
		var events corev1.EventList
		if err := r.List(ctx, &events, client.InNamespace(opts.EventsNamespace)); err != nil {
			return nil, fmt.Errorf("list events in namespace %s: %w", opts.EventsNamespace, err)
		}
		s.Events = events.Items
	}
	return s, nil
}
