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

package testing

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// memberTransitionTime is the member conditions' lastTransitionTime, which the API requires.
var memberTransitionTime = metav1.NewTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))

// ComputeDomainMemberWrapper builds a ComputeDomainMember.
type ComputeDomainMemberWrapper struct{ v1beta1.ComputeDomainMember }

// MakeComputeDomainMember starts the member record of node in the domain cd, named and labeled as a
// daemon names and labels it, in the operator namespace ns.
func MakeComputeDomainMember(cd *v1beta1.ComputeDomain, node, ns string) *ComputeDomainMemberWrapper {
	return &ComputeDomainMemberWrapper{v1beta1.ComputeDomainMember{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "ComputeDomainMember"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      v1beta1.ComputeDomainMemberName(node, cd.UID),
			Namespace: ns,
			Labels:    map[string]string{v1beta1.ComputeDomainLabelKey: string(cd.UID)},
		},
		Spec: v1beta1.ComputeDomainMemberSpec{
			DomainUID:       string(cd.UID),
			DomainNamespace: cd.Namespace,
			DomainName:      cd.Name,
			NodeName:        node,
		},
	}}
}

// Obj returns the built member.
func (w *ComputeDomainMemberWrapper) Obj() *v1beta1.ComputeDomainMember {
	return &w.ComputeDomainMember
}

// IP sets spec.ipAddress.
func (w *ComputeDomainMemberWrapper) IP(ip string) *ComputeDomainMemberWrapper {
	w.Spec.IPAddress = ip
	return w
}

// Clique sets spec.cliqueID.
func (w *ComputeDomainMemberWrapper) Clique(clique string) *ComputeDomainMemberWrapper {
	w.Spec.CliqueID = clique
	return w
}

// Created sets metadata.creationTimestamp.
func (w *ComputeDomainMemberWrapper) Created(t metav1.Time) *ComputeDomainMemberWrapper {
	w.CreationTimestamp = t
	return w
}

// UID sets metadata.uid.
func (w *ComputeDomainMemberWrapper) UID(uid types.UID) *ComputeDomainMemberWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// Ready marks the daemon ready: status.ready and both conditions True.
func (w *ComputeDomainMemberWrapper) Ready() *ComputeDomainMemberWrapper {
	w.Status.Ready = true
	w.Status.Conditions = []metav1.Condition{
		{Type: v1beta1.ComputeDomainMemberConditionIMEXReady, Status: metav1.ConditionTrue, Reason: "Ready", Message: "IMEX answers READY", LastTransitionTime: memberTransitionTime},
		{Type: v1beta1.ComputeDomainMemberConditionPeersConnected, Status: metav1.ConditionTrue, Reason: "Connected", Message: "all peers connected", LastTransitionTime: memberTransitionTime},
	}
	return w
}

// NotReady marks the daemon not ready, with a condition of type condType False for reason and message.
func (w *ComputeDomainMemberWrapper) NotReady(condType, reason, message string) *ComputeDomainMemberWrapper {
	w.Status.Ready = false
	w.Status.Conditions = []metav1.Condition{{Type: condType, Status: metav1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: memberTransitionTime}}
	return w
}

// OwnedBy makes the daemon pod podUID (named name) the record's owner, as the daemon that writes it does.
func (w *ComputeDomainMemberWrapper) OwnedBy(name string, podUID types.UID) *ComputeDomainMemberWrapper {
	w.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: name, UID: podUID, Controller: ptr.To(true)}}
	return w
}
