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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/imexclique"
)

// Reasons of the IMEXReady condition the controller gives a domain's node in the Clique IMEX mode when the
// node's long-lived daemon cannot serve it (the daemon's own conditions otherwise).
const (
	// ReasonNoIMEXDaemon: no trusted long-lived IMEX daemon reports for the node.
	ReasonNoIMEXDaemon = "NoIMEXDaemon"
	// ReasonNotInEnsemble: the node's daemon reports, but its clique's ensemble does not list it yet.
	ReasonNotInEnsemble = "NotInEnsemble"
)

// reconcileCliqueMembership is the membership phase of the Clique IMEX mode: the domain's members are the
// nodes its workload claims are allocated on, each as its long-lived IMEX daemon reports it (an IMEXNode
// the controller trusts), ready when that daemon is ready and its clique's ensemble lists it. A domain
// then forms as soon as its claims are allocated: no pod is scheduled and no API object is written per node.
func (r *Reconciler) reconcileCliqueMembership(ctx context.Context, s *scope) error {
	daemons, err := imexclique.Daemons(ctx, r.client, r.cfg.OperatorNamespace)
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
	var members []v1beta1.ComputeDomainMember
	indices := map[string]int32{}
	now := metav1.NewTime(r.clock.Now())
	for _, node := range s.workloadNodes {
		m := v1beta1.ComputeDomainMember{Spec: v1beta1.ComputeDomainMemberSpec{
			DomainUID: string(s.domain.UID), DomainNamespace: s.domain.Namespace, DomainName: s.domain.Name, NodeName: node,
		}}
		var n v1beta1.IMEXNode
		err := r.client.Get(ctx, client.ObjectKey{Namespace: r.cfg.OperatorNamespace, Name: node}, &n)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("get the IMEXNode of node %s: %w", node, err)
		}
		trusted := []v1beta1.IMEXNode{}
		if err == nil {
			trusted, _ = imexclique.TrustNodes([]v1beta1.IMEXNode{n}, daemons)
		}
		if len(trusted) == 0 {
			noFabric, err := r.nodeWithoutClique(ctx, node)
			if err != nil {
				return err
			}
			if noFabric {
				// As a per-domain daemon reports such a node: a member without a clique, whose claims
				// get no channel (the domain says NoFabric).
				m.Status.Ready = true
				members = append(members, m)
				continue
			}
			setMemberCondition(&m, now, ReasonNoIMEXDaemon,
				fmt.Sprintf("no long-lived IMEX daemon reports for node %s (the chart's IMEX DaemonSet runs on nodes labeled nvidia.com/gpu.clique)", node))
			members = append(members, m)
			continue
		}
		view := imexclique.MemberView(n)
		m.Spec.IPAddress, m.Spec.CliqueID, m.Status = view.Spec.IPAddress, view.Spec.CliqueID, view.Status
		e, err := ensemble(n.Spec.CliqueID)
		if err != nil {
			return err
		}
		if listed, ok := e[node]; ok && listed.IPAddress == n.Spec.IPAddress {
			indices[node] = listed.Index
		} else {
			m.Status.Ready = false
			setMemberCondition(&m, now, ReasonNotInEnsemble, fmt.Sprintf("the IMEX ensemble of clique %s does not list node %s yet", n.Spec.CliqueID, node))
		}
		members = append(members, m)
	}
	s.members = members
	s.indices = indices
	s.channels, s.channelErrors = r.assignChannels(s.domain, members)
	s.membersObserved = true
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

// setMemberCondition marks a synthesized member not ready with an IMEXReady condition the domain's
// conditions quote.
func setMemberCondition(m *v1beta1.ComputeDomainMember, now metav1.Time, reason, message string) {
	m.Status.Ready = false
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{
		Type: v1beta1.ComputeDomainMemberConditionIMEXReady, Status: metav1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: now,
	})
}
