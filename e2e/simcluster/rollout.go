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
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// WaitForRollout waits, as `kubectl rollout status` does for each, until
// every Deployment and every RollingUpdate DaemonSet in namespace that
// matches selector runs its current template on every replica, available
// (ready): what a user runs after `helm upgrade`. DaemonSets updated
// OnDelete are left out, as kubectl leaves them. On timeout the error names
// the workloads still rolling and their counts.
func WaitForRollout(ctx context.Context, client kubernetes.Interface, namespace, selector string, timeout time.Duration) error {
	var pending []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pending = nil
		daemonSets, err := client.AppsV1().DaemonSets(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil //nolint:nilerr // the API may be briefly away; the timeout says what is left
		}
		for i := range daemonSets.Items {
			if msg := daemonSetRolling(&daemonSets.Items[i]); msg != "" {
				pending = append(pending, msg)
			}
		}
		deployments, err := client.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil //nolint:nilerr // as above
		}
		for i := range deployments.Items {
			if msg := deploymentRolling(&deployments.Items[i]); msg != "" {
				pending = append(pending, msg)
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("rollout in %s (%s) not done after %s: %s: %w", namespace, selector, timeout, strings.Join(pending, "; "), err)
	}
	return nil
}

// daemonSetRolling is kubectl's DaemonSet rollout status: empty once done.
func daemonSetRolling(ds *appsv1.DaemonSet) string {
	st := ds.Status
	switch {
	case ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType:
		return ""
	case ds.Generation > st.ObservedGeneration:
		return fmt.Sprintf("daemon set %s: generation %d not observed yet", ds.Name, ds.Generation)
	case st.UpdatedNumberScheduled < st.DesiredNumberScheduled:
		return fmt.Sprintf("daemon set %s: %d of %d updated pods scheduled", ds.Name, st.UpdatedNumberScheduled, st.DesiredNumberScheduled)
	case st.NumberAvailable < st.DesiredNumberScheduled:
		return fmt.Sprintf("daemon set %s: %d of %d updated pods available", ds.Name, st.NumberAvailable, st.DesiredNumberScheduled)
	}
	return ""
}

// deploymentRolling is kubectl's Deployment rollout status: empty once done.
func deploymentRolling(d *appsv1.Deployment) string {
	st := d.Status
	switch {
	case d.Generation > st.ObservedGeneration:
		return fmt.Sprintf("deployment %s: generation %d not observed yet", d.Name, d.Generation)
	case d.Spec.Replicas != nil && st.UpdatedReplicas < *d.Spec.Replicas:
		return fmt.Sprintf("deployment %s: %d of %d replicas updated", d.Name, st.UpdatedReplicas, *d.Spec.Replicas)
	case st.Replicas > st.UpdatedReplicas:
		return fmt.Sprintf("deployment %s: %d old replicas pending termination", d.Name, st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < st.UpdatedReplicas:
		return fmt.Sprintf("deployment %s: %d of %d updated replicas available", d.Name, st.AvailableReplicas, st.UpdatedReplicas)
	}
	return ""
}
