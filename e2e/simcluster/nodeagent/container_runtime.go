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
)

// Container is what a runtime gets to run one container of a pod on this
// node: the kubelet's view after CDI edits, with paths mapped onto the
// node's host root.
type Container struct {
	Pod       *corev1.Pod
	Container *corev1.Container
	// Args is command + args with $(VAR) expanded and absolute paths under
	// a volume mount rewritten to the host root.
	Args []string
	// Env is the container's environment, CDI variables included; values
	// that are absolute paths under a mount are rewritten to the host root.
	Env map[string]string
	// Mounts maps container paths to host paths under the node's root.
	Mounts map[string]string
	// Edits are the container's resolved CDI edits.
	Edits ContainerEdits
	// NodeRoot is the node's host root.
	NodeRoot string
}

// ContainerRuntime runs the containers of known images in-process. A
// container of an image it does not handle only "runs" (see Config.RunDuration).
type ContainerRuntime interface {
	// Handles reports whether the runtime runs this image.
	Handles(image string) bool
	// Run runs the container until ctx ends (the pod is being deleted) or it
	// exits by itself; a nil error is exit code 0.
	Run(ctx context.Context, c Container) error
}

// buildContainer prepares the runtime view of one container.
func (a *Agent) buildContainer(pod *corev1.Pod, c *corev1.Container, edits ContainerEdits, serviceAccountDir string) (Container, error) {
	podIP, err := a.podIPs.assign(pod)
	if err != nil {
		return Container{}, fmt.Errorf("container %s: %w", c.Name, err)
	}
	env, err := containerEnv(pod, c, a.nodeIP, podIP)
	if err != nil {
		return Container{}, fmt.Errorf("container %s: %w", c.Name, err)
	}
	mounts, err := containerMounts(pod, c, a.cfg.Paths.Root)
	if err != nil {
		return Container{}, fmt.Errorf("container %s: %w", c.Name, err)
	}
	if serviceAccountDir != "" {
		mounts[ServiceAccountMountPath] = serviceAccountDir
		// The kubelet's service environment of the default/kubernetes Service.
		if _, set := env["KUBERNETES_SERVICE_HOST"]; !set {
			env["KUBERNETES_SERVICE_HOST"] = a.cfg.APIServer.Host
			env["KUBERNETES_SERVICE_PORT"] = a.cfg.APIServer.Port
		}
	}
	// CDI mounts name real host paths (the plugins write under the node's
	// root already).
	for _, m := range edits.Mounts {
		mounts[m.ContainerPath] = m.HostPath
	}
	return Container{
		Pod: pod, Container: c, Env: mapEnv(mounts, withCDIEnv(env, edits.Env)), Mounts: mounts, Edits: edits, NodeRoot: a.cfg.Paths.Root,
		Args: bindPodIP(mapArgs(mounts, containerArgs(c, env)), podIP),
	}, nil
}
