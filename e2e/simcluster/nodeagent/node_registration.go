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

package nodeagent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// readyConditions are the kubelet's node conditions of a healthy node.
func readyConditions(now metav1.Time) []corev1.NodeCondition {
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "simulated node agent is posting ready status"),
	}
}

// registerNode creates (or adopts) the Node, posts a Ready status the way the
// kubelet does, and removes the not-ready taint that admission adds to new
// Nodes.
func registerNode(ctx context.Context, client kubernetes.Interface, want *corev1.Node) (*corev1.Node, error) {
	node, err := client.CoreV1().Nodes().Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = client.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("register node %s: %w", want.Name, err)
	}
	// Other writers (the node lifecycle controller) may update the Node
	// meanwhile: retry on conflicts with a fresh copy, as the kubelet does.
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		latest, err := client.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		latest.Status = *want.Status.DeepCopy()
		latest.Status.Conditions = readyConditions(metav1.Now())
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, latest, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("post status of node %s: %w", want.Name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		latest, err := client.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node, err = removeNotReadyTaint(ctx, client, latest)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("remove not-ready taint from node %s: %w", want.Name, err)
	}
	return node, nil
}

func removeNotReadyTaint(ctx context.Context, client kubernetes.Interface, node *corev1.Node) (*corev1.Node, error) {
	var kept []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Key != corev1.TaintNodeNotReady {
			kept = append(kept, t)
		}
	}
	if len(kept) == len(node.Spec.Taints) {
		return node, nil
	}
	node.Spec.Taints = kept
	return client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
}
