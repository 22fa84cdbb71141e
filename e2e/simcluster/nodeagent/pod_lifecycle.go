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
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// syncPod moves one pod a step towards what its spec and deletion state ask
// for, as the kubelet's pod worker does. It returns a delay after which the
// pod needs another sync (a running job pod that will finish, a failed
// prepare waiting for the pod resync).
func (a *Agent) syncPod(ctx context.Context, key string) (time.Duration, error) {
	obj, exists, err := a.informer.GetIndexer().GetByKey(key)
	if err != nil {
		return 0, err
	}
	if !exists {
		// Deleted behind our back (force delete): release its claims.
		a.mu.Lock()
		st := a.pods[key]
		a.mu.Unlock()
		if st != nil {
			a.stopContainers(st, 0)
			a.markFinished(st, 137)
			if err := a.unprepare(ctx, st); err != nil {
				return 0, err
			}
			a.forget(key)
		}
		return 0, nil
	}
	pod := obj.(*corev1.Pod).DeepCopy()
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "pod", klog.KObj(pod))
	ctx = klog.NewContext(ctx, logger)

	st, stale := a.state(key, pod.UID)
	if stale != nil {
		a.stopContainers(stale, 0)
		if err := a.unprepare(ctx, stale); err != nil {
			return 0, err
		}
	}
	adopting := false
	if st == nil {
		st = &podState{pod: pod}
		a.remember(key, st)
		adopting = true
	}
	a.setPod(st, pod)
	if adopting && pod.DeletionTimestamp == nil {
		a.adopt(ctx, st)
	}

	switch {
	case pod.DeletionTimestamp != nil:
		return 0, a.terminate(ctx, key, st)
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		a.markFinished(st, st.exitCode)
		a.podIPs.release(pod.UID)
		return 0, a.unprepare(ctx, st)
	case st.finished:
		// Containers ended; the terminal phase waits for the unprepare.
		return 0, a.finish(ctx, st, st.exitCode)
	case !st.prepared:
		if wait := a.waitForResync(st, pod); wait > 0 {
			return wait, nil
		}
		return a.start(ctx, key, st)
	}
	if err := a.syncDeviceHealth(ctx, st); err != nil {
		return 0, err
	}
	switch {
	case len(st.containers) > 0:
		return a.superviseContainers(ctx, key, st)
	case runsToCompletion(pod) && a.runDuration(pod) > 0:
		if left := time.Until(st.startedAt.Add(a.runDuration(pod))); left > 0 {
			return left, nil
		}
		return 0, a.finish(ctx, st, 0)
	}
	return 0, nil
}

// start prepares the pod's claims (kubelet: before creating the sandbox),
// resolves every container's CDI devices, records the edits and reports the
// containers Running.
func (a *Agent) start(ctx context.Context, key string, st *podState) (time.Duration, error) {
	pod := st.pod
	if err := a.dra.PrepareResources(ctx, pod); err != nil {
		return a.prepareFailed(ctx, st, err)
	}
	st.prepared = true
	st.retryAt, st.failedPod = time.Time{}, nil
	edits := map[string]ContainerEdits{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		info, err := a.dra.GetResources(pod, c)
		if err != nil {
			return 0, fmt.Errorf("container %s: CDI devices: %w", c.Name, err)
		}
		var ids []string
		for _, d := range info.CDIDevices {
			ids = append(ids, d.Name)
		}
		e, err := ResolveCDI(a.cfg.Paths.CDI, ids)
		if err != nil {
			msg := fmt.Sprintf("container %s: %v", c.Name, err)
			_ = a.updateStatus(ctx, pod, func(p *corev1.Pod) corev1.PodStatus { return waitingStatus(p, "CreateContainerError", msg) })
			return 0, fmt.Errorf("%s", msg)
		}
		edits[c.Name] = e
	}
	if err := a.recordEdits(ctx, pod, edits); err != nil {
		return 0, err
	}
	podIP, err := a.podIPs.assign(pod)
	if err != nil {
		return 0, err
	}
	if err := a.startContainers(ctx, key, st, edits); err != nil {
		msg := err.Error()
		_ = a.updateStatus(ctx, pod, func(p *corev1.Pod) corev1.PodStatus { return waitingStatus(p, "CreateContainerError", msg) })
		return 0, err
	}
	st.startedAt = time.Now()
	startedAt := metav1.NewTime(st.startedAt)
	unready := a.probeReadiness(ctx, pod, podIP)
	if err := a.updateStatus(ctx, pod, func(p *corev1.Pod) corev1.PodStatus {
		s := runningStatus(p, a.nodeIP, podIP, startedAt, unready)
		a.withDeviceHealth(ctx, p, &s)
		return s
	}); err != nil {
		return 0, err
	}
	klog.FromContext(ctx).V(2).Info("Pod running", "containers", len(edits))
	if len(st.containers) == 0 && runsToCompletion(pod) && a.runDuration(pod) > 0 {
		return a.runDuration(pod), nil
	}
	return 0, nil
}

// RunDurationAnnotation sets how long a pod that does not restart "runs" on a simulated node (a Go duration),
// in place of Config.RunDuration: the simulator's stand-in for a container's command taking that long.
const RunDurationAnnotation = "simcluster.computedomain-operator.io/run-duration"

// runDuration is how long the pod's containers "run": its RunDurationAnnotation when that is a positive
// duration, else Config.RunDuration.
func (a *Agent) runDuration(pod *corev1.Pod) time.Duration {
	if d, err := time.ParseDuration(pod.Annotations[RunDurationAnnotation]); err == nil && d > 0 {
		return d
	}
	return a.cfg.RunDuration
}

// finish ends a pod's containers with exitCode: as the kubelet, its claims
// are unprepared first and only then is the terminal phase written (the
// claim controller frees a claim once its pod is terminal). While the
// unprepare fails, the pod keeps its phase and the sync is retried.
func (a *Agent) finish(ctx context.Context, st *podState, exitCode int32) error {
	a.markFinished(st, exitCode)
	a.podIPs.release(st.pod.UID)
	if err := a.unprepare(ctx, st); err != nil {
		return err
	}
	now := metav1.Now()
	reason := "Completed"
	if exitCode != 0 {
		reason = "Error"
	}
	return a.updateStatus(ctx, st.pod, func(p *corev1.Pod) corev1.PodStatus { return terminatedStatus(p, exitCode, reason, now) })
}

// terminate handles a pod being deleted: containers stop, claims are
// unprepared (also after a failed or partial prepare), then the pod object
// is removed (grace period 0, UID precondition), which is the kubelet's last
// step and waits while the DRA manager may still need to unprepare.
func (a *Agent) terminate(ctx context.Context, key string, st *podState) error {
	pod := st.pod
	grace := 30 * time.Second
	if pod.DeletionGracePeriodSeconds != nil {
		grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	a.stopContainers(st, grace)
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && st.prepared {
		now := metav1.Now()
		if err := a.updateStatus(ctx, pod, func(p *corev1.Pod) corev1.PodStatus {
			s := terminatedStatus(p, 137, "Error", now)
			// A deleted pod keeps its phase until it is gone, like the kubelet
			// reports containers killed on deletion.
			s.Phase = p.Status.Phase
			return s
		}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	a.markFinished(st, 137)
	if err := a.unprepare(ctx, st); err != nil {
		return err
	}
	err := a.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("finish deletion: %w", err)
	}
	a.forget(key)
	klog.FromContext(ctx).V(2).Info("Pod terminated")
	return nil
}

// unprepare releases the pod's claims through the DRA manager, whether or
// not its prepare succeeded: the manager records a pod's claims before it
// calls the plugins, so a failed or partial prepare leaves claims to
// unprepare. It fails while the manager still holds claims for the pod
// (PodMightNeedToUnprepareResources), which keeps the terminal phase and
// the pod's deletion waiting.
func (a *Agent) unprepare(ctx context.Context, st *podState) error {
	if err := a.dra.UnprepareResources(ctx, st.pod); err != nil {
		return fmt.Errorf("unprepare dynamic resources: %w", err)
	}
	if a.dra.PodMightNeedToUnprepareResources(st.pod.UID) {
		return fmt.Errorf("unprepare dynamic resources: the DRA manager still holds claims of pod %s", st.pod.UID)
	}
	st.prepared = false
	return nil
}

// recordEdits stores the containers' CDI edits in CDIEditsAnnotation.
func (a *Agent) recordEdits(ctx context.Context, pod *corev1.Pod, edits map[string]ContainerEdits) error {
	raw, err := json.Marshal(edits)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"uid":         pod.UID,
			"annotations": map[string]string{CDIEditsAnnotation: string(raw)},
		},
	})
	if err != nil {
		return err
	}
	_, err = a.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("record CDI edits: %w", err)
	}
	return nil
}

// updateStatus writes the status computed from the latest pod, retrying on
// conflicts.
func (a *Agent) updateStatus(ctx context.Context, pod *corev1.Pod, status func(*corev1.Pod) corev1.PodStatus) error {
	pods := a.cfg.Client.CoreV1().Pods(pod.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if latest.UID != pod.UID {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
		}
		latest.Status = status(latest)
		_, err = pods.UpdateStatus(ctx, latest, metav1.UpdateOptions{})
		return err
	})
}
