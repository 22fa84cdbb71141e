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
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// SetupWithManager registers the indexes and watches: IMEXCliques, the IMEXNodes (by their clique's name),
// the long-lived daemon pods (through the IMEXNodes they own) and the Nodes' metadata (their clique label, for
// the clique it names and the one their IMEXNode names). The manager's cache must hold
// IMEXNodes and IMEXCliques of the namespace and the daemon pods (the ComputeDomain controller's cache
// does).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &v1beta1.IMEXNode{}, cliqueIDIndexField, func(o client.Object) []string {
		return []string{v1beta1.IMEXCliqueName(o.(*v1beta1.IMEXNode).Spec.CliqueID)}
	}); err != nil {
		return fmt.Errorf("index IMEXNodes by clique: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1beta1.IMEXNode{}, ownerPodUIDIndexName, func(o client.Object) []string {
		var uids []string
		for _, ref := range o.GetOwnerReferences() {
			if ref.Kind == "Pod" {
				uids = append(uids, string(ref.UID))
			}
		}
		return uids
	}); err != nil {
		return fmt.Errorf("index IMEXNodes by owner pod: %w", err)
	}
	cache := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1beta1.IMEXClique{}).
		Watches(&v1beta1.IMEXNode{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			n := o.(*v1beta1.IMEXNode)
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: r.namespace, Name: v1beta1.IMEXCliqueName(n.Spec.CliqueID)}}}
		})).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			var list v1beta1.IMEXNodeList
			if err := cache.List(ctx, &list, client.InNamespace(r.namespace), client.MatchingFields{ownerPodUIDIndexName: string(o.GetUID())}); err != nil {
				return nil
			}
			var reqs []reconcile.Request
			for _, n := range list.Items {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.namespace, Name: v1beta1.IMEXCliqueName(n.Spec.CliqueID)}})
			}
			return reqs
		}), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[ComponentLabelKey] == ComponentLabelValue
		}))).
		WatchesMetadata(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			var reqs []reconcile.Request
			if c := o.GetLabels()[v1beta1.CliqueNodeLabelKey]; c != "" {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.namespace, Name: v1beta1.IMEXCliqueName(c)}})
			}
			var n v1beta1.IMEXNode
			if err := cache.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: o.GetName()}, &n); err == nil && n.Spec.CliqueID != o.GetLabels()[v1beta1.CliqueNodeLabelKey] {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: r.namespace, Name: v1beta1.IMEXCliqueName(n.Spec.CliqueID)}})
			}
			return reqs
		}), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
}
