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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/status"
	"github.com/computedomain-operator/computedomain-operator/controllers/imexclique"
)

// observeIMEX is the IMEX phase: the domain's nodes are the nodes its workload claims are allocated on, each
// with what the long-lived IMEX daemons report of it (its IMEXNode, when the controller trusts it) and where
// its clique's ensemble (the IMEXClique) lists it. A domain forms as soon as its claims are allocated: no pod
// is scheduled and no API object is written per node. It then makes sure the domain holds a channel in every
// clique its nodes are in.
func (r *Reconciler) observeIMEX(ctx context.Context, s *scope) error {
	daemons, err := imexclique.ListDaemons(ctx, r.client, r.cfg.OperatorNamespace)
	if err != nil {
		return err
	}
	ensembles := map[string]map[string]v1beta1.IMEXCliqueNode{}
	ensemble := func(cliqueID string) (map[string]v1beta1.IMEXCliqueNode, error) {
		if e, ok := ensembles[cliqueID]; ok {
			return e, nil
		}
		var q v1beta1.IMEXClique
		e := map[string]v1beta1.IMEXCliqueNode{}
		err := r.client.Get(ctx, client.ObjectKey{Namespace: r.cfg.OperatorNamespace, Name: v1beta1.IMEXCliqueName(cliqueID)}, &q)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get the IMEXClique of clique %s: %w", cliqueID, err)
		}
		if err == nil && q.Spec.CliqueID == cliqueID {
			for _, n := range q.Status.Nodes {
				e[n.Name] = n
			}
		}
		ensembles[cliqueID] = e
		return e, nil
	}
	nodes := make([]status.Node, 0, len(s.workloadNodes))
	for _, name := range s.workloadNodes {
		node := status.Node{Name: name}
		var n v1beta1.IMEXNode
		err := r.client.Get(ctx, client.ObjectKey{Namespace: r.cfg.OperatorNamespace, Name: name}, &n)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("get the IMEXNode of node %s: %w", name, err)
		}
		var trusted []v1beta1.IMEXNode
		if err == nil {
			trusted, _ = imexclique.TrustNodes([]v1beta1.IMEXNode{n}, daemons)
		}
		if len(trusted) == 0 {
			if node.NoFabric, err = r.nodeWithoutClique(ctx, name); err != nil {
				return err
			}
			nodes = append(nodes, node)
			continue
		}
		node.IMEX = &n
		e, err := ensemble(n.Spec.CliqueID)
		if err != nil {
			return err
		}
		if listed, ok := e[name]; ok && listed.IPAddress == n.Spec.IPAddress {
			node.Index = ptr.To(listed.Index)
		}
		nodes = append(nodes, node)
	}
	s.nodes = nodes
	cliques := status.Cliques(nodes)
	if err := r.releaseLeftCliques(ctx, s, cliques); err != nil {
		return err
	}
	s.channels, s.channelErrors = r.assignChannels(s.domain, cliques)
	s.nodesObserved = true
	return nil
}

// releaseLeftCliques gives back the domain's channel in every clique its workload has left, so that idle
// domains do not hold a clique's channels for good. A clique keeps the channel while the domain lists a node
// of it, or any of the domain's claims is allocated on a node of it (by the node's clique label, which its GPU
// plugin sets, or its IMEXNode): a pod on a node whose IMEX daemon restarts still holds the channel's device,
// and a claim stays allocated until its pod is done (the kubelet unprepares before the pod's terminal phase).
func (r *Reconciler) releaseLeftCliques(ctx context.Context, s *scope, listed []string) error {
	keep := map[string]bool{}
	for _, c := range listed {
		keep[c] = true
	}
	for _, name := range s.allocatedNodes {
		n := &metav1.PartialObjectMetadata{}
		n.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
		switch err := r.client.Get(ctx, client.ObjectKey{Name: name}, n); {
		case err == nil:
			if c := n.Labels[v1beta1.CliqueNodeLabelKey]; c != "" {
				keep[c] = true
			}
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("get node %s for its NVLink clique: %w", name, err)
		}
		var imexNode v1beta1.IMEXNode
		switch err := r.client.Get(ctx, client.ObjectKey{Namespace: r.cfg.OperatorNamespace, Name: name}, &imexNode); {
		case err == nil:
			keep[imexNode.Spec.CliqueID] = true
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("get the IMEXNode of node %s: %w", name, err)
		}
	}
	if released := r.channels.ReleaseExcept(s.domain.UID, keep); len(released) > 0 {
		klog.FromContext(ctx).V(2).Info("Gave back the domain's channels in the cliques its workload left", "cliques", released)
	}
	return nil
}

// nodeWithoutClique tells whether node exists and has no NVLink clique label: no long-lived daemon runs
// there, and none will. The controller caches Nodes' metadata only.
func (r *Reconciler) nodeWithoutClique(ctx context.Context, node string) (bool, error) {
	n := &metav1.PartialObjectMetadata{}
	n.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := r.client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("get node %s: %w", node, err)
	}
	return n.Labels[v1beta1.CliqueNodeLabelKey] == "", nil
}
