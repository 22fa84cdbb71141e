package nodeagent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// restartDelay is how long an exited container of a restarting pod waits
// before it runs again.
const restartDelay = time.Second

// runningContainer is one container run by the Runtime.
type runningContainer struct {
	view      Container
	cancel    context.CancelFunc
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
	for i := range st.pod.Spec.Containers {
		c := &st.pod.Spec.Containers[i]
		if !a.cfg.Runtime.Handles(c.Image) {
			continue
		}
		view, err := a.buildContainer(st.pod, c, edits[c.Name])
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

// launch runs a container on its own goroutine. Its context outlives the
// sync that started it: only stopContainers or the agent's end cancel it.
func (a *Agent) launch(ctx context.Context, key string, rc *runningContainer) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	rc.cancel = func() { stop(); cancel() }
	rc.done = make(chan struct{})
	rc.err = nil
	rc.startedAt = time.Now()
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "container", rc.view.Container.Name)
	go func() {
		defer close(rc.done)
		defer a.queue.Add(key)
		rc.err = a.cfg.Runtime.Run(klog.NewContext(cctx, logger), rc.view)
		if cctx.Err() == nil {
			logger.V(2).Info("Container exited", "err", rc.err)
		}
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

// stopContainers cancels the pod's runtime containers and waits for them up
// to the grace period.
func (a *Agent) stopContainers(st *podState, grace time.Duration) {
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
