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
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// restartDelay is how long an exited container of a restarting pod waits
// before it runs again.
const restartDelay = time.Second

// runningContainer is one container run by the Runtime.
type runningContainer struct {
	view Container
	// cancel stops the container for good (pod deletion); kill ends it as a
	// crash would, and the restart policy applies.
	cancel    func()
	kill      func()
	done      chan struct{}
	err       error
	startedAt time.Time
	restarts  int
}

func (c *runningContainer) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// startContainers launches the pod's containers of Runtime images; each exit
// requeues the pod.
func (a *Agent) startContainers(ctx context.Context, key string, st *podState, edits map[string]ContainerEdits) error {
	if a.cfg.Runtime == nil {
		return nil
	}
	if slices.ContainsFunc(st.pod.Spec.Containers, func(c corev1.Container) bool { return a.cfg.Runtime.Handles(c.Image) }) {
		if err := a.writeSecretVolumes(ctx, st.pod); err != nil {
			return err
		}
	}
	saDir := ""
	for i := range st.pod.Spec.Containers {
		c := &st.pod.Spec.Containers[i]
		if !a.cfg.Runtime.Handles(c.Image) {
			continue
		}
		if saDir == "" && mountsServiceAccountToken(st.pod) {
			tokenCtx, stop := context.WithCancel(a.containers)
			st.stopToken = stop
			dir, err := a.projectServiceAccountToken(klog.NewContext(tokenCtx, klog.FromContext(ctx)), st.pod)
			if err != nil {
				return err
			}
			saDir = dir
		}
		view, err := a.buildContainer(st.pod, c, edits[c.Name], saDir)
		if err != nil {
			return err
		}
		if st.containers == nil {
			st.containers = map[string]*runningContainer{}
		}
		rc := &runningContainer{view: view}
		st.containers[c.Name] = rc
		a.launch(ctx, key, rc)
	}
	return nil
}

// launch runs a container on its own goroutine. Its context is the agent's
// container context, not the sync's: it outlives Run (a kubelet that stops
// leaves its containers running) and ends with stopContainers (pod
// deletion), kill, or StopContainers.
func (a *Agent) launch(ctx context.Context, key string, rc *runningContainer) {
	cctx, cancel := context.WithCancelCause(a.containers)
	done := make(chan struct{})
	a.mu.Lock()
	rc.cancel = func() { cancel(context.Canceled) }
	rc.kill = func() { cancel(errKilled) }
	rc.done = done
	rc.err = nil
	rc.startedAt = time.Now()
	a.mu.Unlock()
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "container", rc.view.Container.Name)
	a.running.Add(1)
	go func() {
		defer a.running.Done()
		defer close(done)
		defer a.queue.Add(key)
		err := a.cfg.Runtime.Run(klog.NewContext(cctx, logger), rc.view)
		if errors.Is(context.Cause(cctx), errKilled) {
			err = errKilled
		}
		a.mu.Lock()
		rc.err = err
		a.mu.Unlock()
		logger.V(2).Info("Container exited", "err", err)
	}()
}

// superviseContainers applies the pod's restart policy to exited
// containers and finishes the pod when none will run again.
func (a *Agent) superviseContainers(ctx context.Context, key string, st *podState) (time.Duration, error) {
	policy := st.pod.Spec.RestartPolicy
	running, failed := 0, false
	var wait time.Duration
	for _, rc := range st.containers {
		if !rc.exited() {
			running++
			continue
		}
		restart := policy == corev1.RestartPolicyAlways || (policy == corev1.RestartPolicyOnFailure && rc.err != nil)
		if !restart {
			failed = failed || rc.err != nil
			continue
		}
		if left := time.Until(rc.startedAt.Add(restartDelay)); left > 0 {
			running++
			wait = max(wait, left)
			continue
		}
		rc.restarts++
		klog.FromContext(ctx).V(2).Info("Restarting container", "container", rc.view.Container.Name, "restarts", rc.restarts, "lastErr", rc.err)
		if err := a.recordRestart(ctx, st.pod, rc); err != nil {
			return 0, err
		}
		a.launch(ctx, key, rc)
		running++
	}
	if running > 0 {
		return wait, nil
	}
	var exitCode int32
	if failed {
		exitCode = 1
	}
	return 0, a.finish(ctx, st, exitCode)
}

// maxTerminationMessage is the kubelet's cap on one container's termination message.
const maxTerminationMessage = 4096

// terminationMessage is what a failed in-process container leaves in its status: its error, the last thing
// it would have logged (the kubelet's terminationMessagePolicy FallbackToLogsOnError shows the log's tail),
// cut to the kubelet's 4096 bytes.
func terminationMessage(err error) string {
	msg := err.Error()
	if len(msg) > maxTerminationMessage {
		msg = msg[len(msg)-maxTerminationMessage:]
	}
	return msg
}

// errKilled is the exit of a container killed on purpose (KillContainer).
var errKilled = errors.New("killed")

// KillContainer ends a running container of a pod on this node as a crash
// would (exit code 137); the pod's restart policy then applies, as the kubelet
// does when a container process dies.
func (a *Agent) KillContainer(namespace, pod, container string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.pods[namespace+"/"+pod]
	if st == nil {
		return fmt.Errorf("pod %s/%s does not run on node %s", namespace, pod, a.cfg.Node.Name)
	}
	rc := st.containers[container]
	if rc == nil || rc.kill == nil {
		return fmt.Errorf("container %s of pod %s/%s is not run by the node runtime", container, namespace, pod)
	}
	rc.kill()
	return nil
}

// recordRestart reports the restart in the container's status: restart
// count and the last termination, as the kubelet does.
func (a *Agent) recordRestart(ctx context.Context, pod *corev1.Pod, rc *runningContainer) error {
	a.mu.Lock()
	exitErr, startedAt := rc.err, rc.startedAt
	a.mu.Unlock()
	now := metav1.Now()
	exitCode, reason, message := int32(0), "Completed", ""
	if exitErr != nil {
		exitCode, reason = 1, "Error"
		if errors.Is(exitErr, errKilled) {
			exitCode = 137
		} else {
			message = terminationMessage(exitErr)
		}
	}
	return a.updateStatus(ctx, pod, func(p *corev1.Pod) corev1.PodStatus {
		status := *p.Status.DeepCopy()
		for i := range status.ContainerStatuses {
			cs := &status.ContainerStatuses[i]
			if cs.Name != rc.view.Container.Name {
				continue
			}
			cs.RestartCount = int32(rc.restarts)
			cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: exitCode, Reason: reason, Message: message, StartedAt: metav1.NewTime(startedAt), FinishedAt: now, ContainerID: cs.ContainerID,
			}}
			cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}
		}
		return status
	})
}

// stopContainers cancels the pod's runtime containers and waits for them up
// to the grace period.
func (a *Agent) stopContainers(st *podState, grace time.Duration) {
	if st.stopToken != nil {
		st.stopToken()
	}
	deadline := time.After(grace)
	for _, rc := range st.containers {
		rc.cancel()
	}
	for name, rc := range st.containers {
		select {
		case <-rc.done:
		case <-deadline:
			klog.Background().Info("Container did not stop within the grace period", "pod", klog.KObj(st.pod), "container", name, "grace", grace)
			return
		}
	}
}

// String describes a container for logs.
func (c Container) String() string {
	return fmt.Sprintf("%s/%s[%s]", c.Pod.Namespace, c.Pod.Name, c.Container.Name)
}
