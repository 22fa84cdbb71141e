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

// conditionTransitionTime is the conditions' lastTransitionTime, which the API requires.
var conditionTransitionTime = metav1.NewTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))

// IMEXNodeWrapper builds an IMEXNode.
type IMEXNodeWrapper struct{ v1beta1.IMEXNode }

// MakeIMEXNode starts the IMEXNode of node in the operator namespace ns, named as its daemon names it (after
// the node).
func MakeIMEXNode(node, ns string) *IMEXNodeWrapper {
	return &IMEXNodeWrapper{v1beta1.IMEXNode{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: "IMEXNode"},
		ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: ns},
		Spec:       v1beta1.IMEXNodeSpec{NodeName: node},
	}}
}

// Obj returns the built IMEXNode.
func (w *IMEXNodeWrapper) Obj() *v1beta1.IMEXNode { return &w.IMEXNode }

// IP sets spec.ipAddress.
func (w *IMEXNodeWrapper) IP(ip string) *IMEXNodeWrapper {
	w.Spec.IPAddress = ip
	return w
}

// Clique sets spec.cliqueID.
func (w *IMEXNodeWrapper) Clique(clique string) *IMEXNodeWrapper {
	w.Spec.CliqueID = clique
	return w
}

// Ready marks the daemon ready: status.ready and both conditions True.
func (w *IMEXNodeWrapper) Ready() *IMEXNodeWrapper {
	w.Status.Ready = true
	w.Status.Conditions = []metav1.Condition{
		{Type: v1beta1.IMEXNodeConditionIMEXReady, Status: metav1.ConditionTrue, Reason: "Ready", Message: "IMEX answers READY", LastTransitionTime: conditionTransitionTime},
		{Type: v1beta1.IMEXNodeConditionPeersConnected, Status: metav1.ConditionTrue, Reason: "Connected", Message: "all peers connected", LastTransitionTime: conditionTransitionTime},
	}
	return w
}

// NotReady marks the daemon not ready, with a condition of type condType False for reason and message (the
// other condition True).
func (w *IMEXNodeWrapper) NotReady(condType, reason, message string) *IMEXNodeWrapper {
	w.Ready()
	w.Status.Ready = false
	for i := range w.Status.Conditions {
		if c := &w.Status.Conditions[i]; c.Type == condType {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, reason, message
		}
	}
	return w
}

// OwnedBy makes the daemon pod podUID (named name) the record's owner, as the daemon that writes it does.
func (w *IMEXNodeWrapper) OwnedBy(name string, podUID types.UID) *IMEXNodeWrapper {
	w.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: name, UID: podUID, Controller: ptr.To(true)}}
	return w
}
