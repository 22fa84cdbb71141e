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

package simcluster

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PodsSummary describes the pods of a namespace for test failure messages: each pod's phase, node, scheduling
// group and gates, and the messages of its conditions that are not true.
func PodsSummary(ctx context.Context, client kubernetes.Interface, ns string) string {
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, p := range pods.Items {
		part := fmt.Sprintf("%s: %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		if g := p.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
			part += fmt.Sprintf(" in PodGroup %q", *g.PodGroupName)
		}
		for _, g := range p.Spec.SchedulingGates {
			part += fmt.Sprintf(" gated by %s", g.Name)
		}
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				part += fmt.Sprintf(" (%s: %s)", c.Type, c.Message)
			}
		}
		parts = append(parts, part)
	}
	return "pods in " + ns + ": " + strings.Join(parts, "; ")
}
