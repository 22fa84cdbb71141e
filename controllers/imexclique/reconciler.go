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
	"slices"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// ControllerName names the controller and its field manager.
const ControllerName = "imex-clique-controller"

// Labels of the long-lived daemon pods (the chart's IMEX DaemonSet). Only pods with both, in the operator
// namespace, vouch for an IMEXNode.
const (
	AppLabelKey         = "app.kubernetes.io/name"
	AppLabelValue       = "compute-domain-daemon"
	ComponentLabelKey   = "app.kubernetes.io/component"
	ComponentLabelValue = "imex-clique-daemon"
)

// Field indexes of IMEXNodes in the manager's cache.
const (
	cliqueIDIndexField   = "spec.cliqueName"
	ownerPodUIDIndexName = "ownerPodUID"
)

// Reconciler reconciles IMEXCliques, one per clique name.
type Reconciler struct {
	client    client.Client
	namespace string
	limit     int
	// written is the status the controller last wrote per IMEXClique UID in this process: the cache lags
	// behind the controller's own writes, and an index computed from a stale status would move.
	mu      sync.Mutex
	written map[types.UID]v1beta1.IMEXCliqueStatus
	// refused is called for each IMEXNode the controller does not trust (nil: logged only).
	refused RefusedFunc
}

// RefusedFunc is told of each IMEXNode the controller does not trust, and why.
type RefusedFunc func(ctx context.Context, n *v1beta1.IMEXNode, reason string)

// NewReconciler returns a reconciler of the IMEXCliques in namespace, at most limit nodes per clique, that
// tells refused (when not nil) of each IMEXNode it does not trust.
func NewReconciler(c client.Client, namespace string, limit int, refused RefusedFunc) *Reconciler {
	if limit <= 0 {
		limit = v1beta1.NVL72CliqueSize
	}
	return &Reconciler{client: c, namespace: namespace, limit: limit, written: map[types.UID]v1beta1.IMEXCliqueStatus{}, refused: refused}
}

// Reconcile brings the IMEXClique req.Name in line with the trusted IMEXNodes of its clique.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := klog.FromContext(ctx).WithValues("imexClique", req.Name)
	ctx = klog.NewContext(ctx, logger)
	nodes, cliqueID, err := r.trustedNodes(ctx, req.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	var q v1beta1.IMEXClique
	err = r.client.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: req.Name}, &q)
	switch {
	case apierrors.IsNotFound(err):
		if len(nodes) == 0 {
			return ctrl.Result{}, nil
		}
		q = v1beta1.IMEXClique{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: req.Name, Labels: map[string]string{v1beta1.ManagedByLabelKey: v1beta1.ManagedByLabelValue}},
			Spec:       v1beta1.IMEXCliqueSpec{CliqueID: cliqueID},
		}
		if err := r.client.Create(ctx, &q); err != nil {
			return ctrl.Result{}, fmt.Errorf("create IMEXClique %s: %w", req.Name, err)
		}
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get IMEXClique %s: %w", req.Name, err)
	}
	previous := r.previous(&q)
	held := func(node string) bool {
		clique, err := r.nodeClique(ctx, node)
		return err == nil && clique == q.Spec.CliqueID
	}
	status, overflow := Ensemble(previous, nodes, r.limit, held)
	if len(overflow) > 0 {
		logger.Info("Clique has more nodes than its ensemble holds; they join when an index frees up", "limit", r.limit, "left out", overflow)
		for i := range nodes {
			if slices.Contains(overflow, nodes[i].Name) && r.refused != nil {
				r.refused(ctx, &nodes[i], fmt.Sprintf("clique %s's ensemble is full: its %d indices are held by its members (a member whose IMEX daemon is away keeps its index while its node is in the clique); the node joins when one leaves", q.Spec.CliqueID, r.limit))
			}
		}
	}
	if equality.Semantic.DeepEqual(previous, status) {
		return ctrl.Result{}, nil
	}
	before := q.DeepCopy()
	q.Status = status
	if err := r.client.Status().Patch(ctx, &q, client.MergeFrom(before)); err != nil {
		return ctrl.Result{}, fmt.Errorf("write status of IMEXClique %s: %w", req.Name, err)
	}
	r.mu.Lock()
	r.written[q.UID] = *status.DeepCopy()
	r.mu.Unlock()
	logger.V(2).Info("Wrote the clique's ensemble", "nodes", status.TotalNodes)
	return ctrl.Result{}, nil
}

// previous is the status to compute from: the one this process last wrote for the object, else the cached one.
func (r *Reconciler) previous(q *v1beta1.IMEXClique) v1beta1.IMEXCliqueStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st, ok := r.written[q.UID]; ok {
		return *st.DeepCopy()
	}
	return *q.Status.DeepCopy()
}

// nodeClique is the node's NVLink clique label ("" for a node without one, or a node that is gone).
func (r *Reconciler) nodeClique(ctx context.Context, node string) (string, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := r.client.Get(ctx, client.ObjectKey{Name: node}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("get node %s for its NVLink clique: %w", node, err)
	}
	return m.Labels[v1beta1.CliqueNodeLabelKey], nil
}

// trustedNodes returns the IMEXNodes of the clique named name that a live long-lived daemon pod on their
// node and at their address owns, on a node whose clique label (the GPU plugin's) agrees, and the clique's ID.
func (r *Reconciler) trustedNodes(ctx context.Context, name string) ([]v1beta1.IMEXNode, string, error) {
	var list v1beta1.IMEXNodeList
	if err := r.client.List(ctx, &list, client.InNamespace(r.namespace), client.MatchingFields{cliqueIDIndexField: name}); err != nil {
		return nil, "", fmt.Errorf("list IMEXNodes of clique %s: %w", name, err)
	}
	daemons, err := ListDaemons(ctx, r.client, r.namespace)
	if err != nil {
		return nil, "", err
	}
	trusted, refused := TrustNodes(list.Items, daemons)
	kept := trusted[:0]
	for _, n := range trusted {
		clique, err := r.nodeClique(ctx, n.Spec.NodeName)
		switch {
		case err != nil:
			return nil, "", err
		case clique != n.Spec.CliqueID:
			refused = append(refused, NodeRefusal{Node: n, Reason: fmt.Sprintf(
				"it says clique %s but node %s's %s label, which only the node's GPU plugin may set, says %q", n.Spec.CliqueID, n.Spec.NodeName, v1beta1.CliqueNodeLabelKey, clique)})
		default:
			kept = append(kept, n)
		}
	}
	trusted = kept
	for _, f := range refused {
		klog.FromContext(ctx).Info("Ignoring an IMEXNode that disagrees with where the clique's daemons run", "imexNode", klog.KObj(&f.Node), "reason", f.Reason)
		if r.refused != nil {
			r.refused(ctx, &f.Node, f.Reason)
		}
	}
	cliqueID := ""
	for _, n := range list.Items {
		cliqueID = n.Spec.CliqueID
	}
	return trusted, cliqueID, nil
}

// Ensemble computes a clique's ensemble from its previous status and its trusted nodes: every node with an
// address, at most limit, each keeping its previous index (imex.AssignIndices); the rest overflow. A previous
// member missing from nodes for which held says true (its node is still in the clique: its daemon is restarting,
// or its tray is down) stays a member, at its last address, as in a static IMEX configuration, so that no
// newcomer (a node of another clique that claims this one, say) can take a real member's place meanwhile. A
// member leaves when its node leaves the clique (the Node goes, or its clique label changes).
func Ensemble(previous v1beta1.IMEXCliqueStatus, nodes []v1beta1.IMEXNode, limit int, held func(node string) bool) (v1beta1.IMEXCliqueStatus, []string) {
	prev := map[string]int32{}
	for _, n := range previous.Nodes {
		prev[n.Name] = n.Index
	}
	ips := map[string]string{}
	var names []string
	for _, n := range nodes {
		if n.Spec.IPAddress == "" || n.Spec.NodeName != n.Name {
			continue
		}
		ips[n.Name] = n.Spec.IPAddress
		names = append(names, n.Name)
	}
	for _, n := range previous.Nodes {
		if _, listed := ips[n.Name]; !listed && n.IPAddress != "" && held != nil && held(n.Name) {
			ips[n.Name] = n.IPAddress
			names = append(names, n.Name)
		}
	}
	indices, overflow := imex.AssignIndices(names, prev, limit)
	status := v1beta1.IMEXCliqueStatus{}
	for name, idx := range indices {
		status.Nodes = append(status.Nodes, v1beta1.IMEXCliqueNode{Name: name, IPAddress: ips[name], Index: idx})
	}
	sort.Slice(status.Nodes, func(i, j int) bool { return status.Nodes[i].Name < status.Nodes[j].Name })
	status.TotalNodes = int32(len(status.Nodes))
	return status, overflow
}
