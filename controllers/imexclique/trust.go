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

package imexclique

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// Daemon is one long-lived IMEX daemon pod, as the cache of the operator namespace shows it.
type Daemon struct {
	Node string
	// IP is the pod's address ("" while it has none yet).
	IP string
	// Terminating: the pod is being deleted (its node is drained or lost).
	Terminating bool
}

// Daemons are the long-lived IMEX daemon pods by pod UID. Only the chart's DaemonSet creates them (the
// operator namespace admits no other pods with their labels and service account), so they, not the IMEXNodes
// that any daemon's token may write, say which node is at which address.
type Daemons map[types.UID]Daemon

// ListDaemons lists the long-lived IMEX daemon pods of the operator namespace, by pod UID.
func ListDaemons(ctx context.Context, c client.Reader, namespace string) (Daemons, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace),
		client.MatchingLabels{AppLabelKey: AppLabelValue, ComponentLabelKey: ComponentLabelValue}); err != nil {
		return nil, fmt.Errorf("list the long-lived IMEX daemon pods: %w", err)
	}
	daemons := Daemons{}
	for _, p := range pods.Items {
		daemons[p.UID] = Daemon{Node: p.Spec.NodeName, IP: p.Status.PodIP, Terminating: p.DeletionTimestamp != nil}
	}
	return daemons, nil
}

// NodeRefusal is an IMEXNode the controller does not trust, with the reason.
type NodeRefusal struct {
	Node   v1beta1.IMEXNode
	Reason string
}

// TrustNodes keeps the IMEXNodes that agree with the long-lived daemon pod that owns them: a record counts
// only when its owner is a live daemon pod on the record's node, and the record's address is that pod's. A
// record without such an owner is refused (a node forging its way into a clique's ensemble, or a record
// naming another node or address than its daemon's). A record whose owner is gone or terminating is leaving
// with its daemon (the garbage collector removes it after the pod), and one whose daemon has no address yet
// is pending (the pod's status catches up with the record its daemon wrote): neither counts, neither is
// refused.
func TrustNodes(nodes []v1beta1.IMEXNode, daemons Daemons) (trusted []v1beta1.IMEXNode, refused []NodeRefusal) {
	refuse := func(n v1beta1.IMEXNode, format string, args ...any) {
		refused = append(refused, NodeRefusal{Node: n, Reason: fmt.Sprintf(format, args...)})
	}
	for _, n := range nodes {
		owner := podOwner(n)
		if owner == nil {
			refuse(n, "it is not owned by a long-lived IMEX daemon pod")
			continue
		}
		d, known := daemons[owner.UID]
		switch {
		case !known:
			// The owner is gone (or never was a long-lived daemon): not counted, and not reported,
			// since the record of a daemon that just left looks the same.
		case d.Node != n.Spec.NodeName:
			refuse(n, "it names node %s but its IMEX daemon pod runs on node %s", n.Spec.NodeName, d.Node)
		case d.Terminating, d.IP == "":
			// leaving, or pending
		case n.Spec.IPAddress != "" && n.Spec.IPAddress != d.IP:
			refuse(n, "address %s is not the address %s of its IMEX daemon pod on node %s", n.Spec.IPAddress, d.IP, d.Node)
		default:
			trusted = append(trusted, n)
		}
	}
	return trusted, refused
}

// podOwner is the record's owning Pod reference, if any.
func podOwner(n v1beta1.IMEXNode) *metav1.OwnerReference {
	for i, ref := range n.OwnerReferences {
		if ref.Kind == "Pod" && ref.APIVersion == "v1" {
			return &n.OwnerReferences[i]
		}
	}
	return nil
}
