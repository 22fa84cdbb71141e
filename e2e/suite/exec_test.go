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

package suite

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// execInContainer runs command in a running container, as kubectl exec does (the real kubelet's streaming
// server, on a cluster that has one; the simulated cluster's nodes run no container), and returns its stdout.
func execInContainer(ctx context.Context, pod *corev1.Pod, container string, command ...string) (string, error) {
	req := env.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: container, Command: command, Stdout: true, Stderr: true,
	}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(env.restConfig, "POST", req.URL())
	if err != nil {
		return "", fmt.Errorf("exec in %s/%s %s: %w", pod.Namespace, pod.Name, container, err)
	}
	var stdout, stderr bytes.Buffer
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return "", fmt.Errorf("exec %q in %s/%s %s: %w (stderr: %s)", strings.Join(command, " "), pod.Namespace, pod.Name, container, err, stderr.String())
	}
	return stdout.String(), nil
}
