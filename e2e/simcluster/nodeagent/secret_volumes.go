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
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// secretVolumeDir is the host directory of a pod's secret volume, as the
// kubelet lays it out.
func secretVolumeDir(root string, pod *corev1.Pod, volume string) string {
	return filepath.Join(root, "var/lib/kubelet/pods", string(pod.UID), "volumes/kubernetes.io~secret", volume)
}

// writeSecretVolumes writes every secret volume of the pod under the node's
// root once, before its containers start, as the kubelet does: each key of
// the Secret a file (or the volume's items only, at their paths). A Secret
// that does not exist keeps the pod from starting unless the volume is
// optional. The files are not refreshed when the Secret changes.
func (a *Agent) writeSecretVolumes(ctx context.Context, pod *corev1.Pod) error {
	for _, v := range pod.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		secret, err := a.cfg.Client.CoreV1().Secrets(pod.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			if v.Secret.Optional != nil && *v.Secret.Optional {
				secret = &corev1.Secret{}
			} else {
				return fmt.Errorf("volume %s: secret %s/%s: %w", v.Name, pod.Namespace, v.Secret.SecretName, err)
			}
		}
		files, err := secretFiles(v.Name, v.Secret, secret)
		if err != nil {
			return err
		}
		dir := secretVolumeDir(a.cfg.Paths.Root, pod, v.Name)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
		for rel, data := range files {
			path := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
				return err
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// secretFiles maps the files of one secret volume to their contents: every
// key, or only the volume's items at their paths (a missing key fails unless
// the volume is optional).
func secretFiles(volume string, src *corev1.SecretVolumeSource, secret *corev1.Secret) (map[string][]byte, error) {
	files := map[string][]byte{}
	if len(src.Items) == 0 {
		for k, data := range secret.Data {
			files[k] = data
		}
		return files, nil
	}
	for i, item := range src.Items {
		data, ok := secret.Data[item.Key]
		if !ok {
			if src.Optional != nil && *src.Optional {
				continue
			}
			return nil, fmt.Errorf("volume %s: items[%d].key %q: secret %s has no such key", volume, i, item.Key, secret.Name)
		}
		if filepath.IsAbs(item.Path) || !filepath.IsLocal(item.Path) {
			return nil, fmt.Errorf("volume %s: items[%d].path %q: must be a relative path inside the volume", volume, i, item.Path)
		}
		files[item.Path] = data
	}
	return files, nil
}
