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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// The kubelet's pod resync: SyncFrequency 1 m with jitter factor 0.5
// (pkg/kubelet/pod_workers.go), so a pod whose sync returned waits 60-90 s.
const (
	podResyncPeriod = time.Minute
	podResyncJitter = 0.5
)

// failedPrepareReason is the kubelet's event reason
// (pkg/kubelet/events.FailedPrepareDynamicResources).
const failedPrepareReason = "FailedPrepareDynamicResources"

// podResyncDelay is when the kubelet syncs a pod again that nothing changed.
func podResyncDelay() time.Duration {
	return wait.Jitter(podResyncPeriod, podResyncJitter)
}

// prepareFailed does what the kubelet's SyncPod does when
// PrepareDynamicResources fails (kuberuntime_manager.go): a Warning event on
// the pod, the containers left Waiting in ContainerCreating, and a return
// that does not fail the sync, so the pod is tried again at its resync,
// 60-90 s later, or earlier when the pod object changes. With FastRetry the
// sync fails instead and the agent's short backoff applies.
func (a *Agent) prepareFailed(ctx context.Context, st *podState, err error) (time.Duration, error) {
	pod := st.pod
	a.recorder.Eventf(pod, corev1.EventTypeWarning, failedPrepareReason, "Failed to prepare dynamic resources: %v", err)
	if werr := a.updateStatus(ctx, pod, func(p *corev1.Pod) corev1.PodStatus { return waitingStatus(p, "ContainerCreating", "") }); werr != nil {
		klog.FromContext(ctx).V(2).Info("Writing the waiting status failed", "err", werr)
	}
	if a.cfg.FastRetry {
		return 0, err
	}
	delay := podResyncDelay()
	st.retryAt, st.failedPod = time.Now().Add(delay), pod
	klog.FromContext(ctx).V(2).Info("Prepare failed, retrying at the pod resync", "after", delay, "err", err)
	return delay, nil
}

// waitForResync is how long a pod whose prepare failed still waits for its
// resync; zero when the resync is due or the pod object changed since the
// failure (the kubelet syncs a pod again on an update of its spec, labels,
// annotations or deletion, not of its status).
func (a *Agent) waitForResync(st *podState, pod *corev1.Pod) time.Duration {
	if st.failedPod == nil || podObjectChanged(st.failedPod, pod) {
		return 0
	}
	return max(time.Until(st.retryAt), 0)
}

// podObjectChanged compares what the kubelet's pod config compares
// (pkg/kubelet/config: checkAndUpdatePod) to decide that a pod was updated.
func podObjectChanged(old, pod *corev1.Pod) bool {
	return !equality.Semantic.DeepEqual(old.Spec, pod.Spec) ||
		!equality.Semantic.DeepEqual(old.Labels, pod.Labels) ||
		!equality.Semantic.DeepEqual(old.Annotations, pod.Annotations) ||
		!equality.Semantic.DeepEqual(old.DeletionTimestamp, pod.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(old.DeletionGracePeriodSeconds, pod.DeletionGracePeriodSeconds)
}
