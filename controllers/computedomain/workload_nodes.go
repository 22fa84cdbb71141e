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
	"context"
	"fmt"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/allocation"
)

// workloadClaims lists the domain's workload claims: those generated from its workload claim template,
// which carry the template's WorkloadClaimLabelKey label.
func (r *Reconciler) workloadClaims(ctx context.Context, cd *v1beta1.ComputeDomain) ([]resourcev1.ResourceClaim, error) {
	var list resourcev1.ResourceClaimList
	if err := r.client.List(ctx, &list, client.InNamespace(cd.Namespace),
		client.MatchingLabels{v1beta1.WorkloadClaimLabelKey: string(cd.UID)}); err != nil {
		return nil, fmt.Errorf("list workload ResourceClaims of %s: %w", klog.KObj(cd), err)
	}
	return list.Items, nil
}

// WorkloadNodes returns, sorted and without repeats, the nodes on which the domain's workload claims are
// allocated and reserved for a consumer: the nodes its pods are bound to. A claim counts from the moment
// the scheduler allocates it (before the kubelet prepares it, so the daemon starts while the pod's other
// claims are being prepared) until the ResourceClaim controller removes the last reservation, when its pod
// is done or deleted.
func WorkloadNodes(claims []resourcev1.ResourceClaim) []string {
	var nodes []string
	for i := range claims {
		c := &claims[i]
		if len(c.Status.ReservedFor) == 0 {
			continue
		}
		if node, ok := allocation.Node(c); ok {
			nodes = append(nodes, node)
		}
	}
	slices.Sort(nodes)
	return slices.Compact(nodes)
}

// allocatedNodes returns, sorted and without repeats, the nodes any of the claims is allocated on.
func allocatedNodes(claims []resourcev1.ResourceClaim) []string {
	var nodes []string
	for i := range claims {
		if node, ok := allocation.Node(&claims[i]); ok {
			nodes = append(nodes, node)
		}
	}
	slices.Sort(nodes)
	return slices.Compact(nodes)
}
