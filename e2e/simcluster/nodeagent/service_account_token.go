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
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

const (
	// ServiceAccountMountPath is where a container finds its service account
	// token, the API server's CA and its namespace, as on a real node.
	ServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// tokenExpiration is what the kubelet asks for (1 h + 7 s); tokens are
	// renewed at 80 % of it.
	tokenExpiration = 3607 * time.Second
)

// APIServer is what the node's pods need to reach the API server: its
// address (KUBERNETES_SERVICE_HOST/PORT) and the CA of its serving
// certificate (ca.crt of the service account mount).
type APIServer struct {
	Host   string
	Port   string
	CAData []byte
}

// mountsServiceAccountToken reports whether the pod gets a token: it names a
// service account and does not opt out, the ServiceAccount admission plugin's
// rule for adding the kube-api-access volume.
func mountsServiceAccountToken(pod *corev1.Pod) bool {
	if pod.Spec.ServiceAccountName == "" {
		return false
	}
	return pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken
}

// serviceAccountDir is the host directory of the pod's projected token
// volume, as the kubelet lays it out.
func (a *Agent) serviceAccountDir(pod *corev1.Pod) string {
	return filepath.Join(a.cfg.Paths.Root, "var/lib/kubelet/pods", string(pod.UID), "volumes/kubernetes.io~projected/kube-api-access")
}

// projectServiceAccountToken writes the pod's token volume (a token bound to
// the pod, so that it carries the node's name, the API server's CA and the
// namespace) and keeps the token fresh until ctx ends.
func (a *Agent) projectServiceAccountToken(ctx context.Context, pod *corev1.Pod) (string, error) {
	dir := a.serviceAccountDir(pod)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), a.cfg.APIServer.CAData, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "namespace"), []byte(pod.Namespace), 0o644); err != nil {
		return "", err
	}
	expires, err := a.writeToken(ctx, pod, dir)
	if err != nil {
		return "", err
	}
	go func() {
		for {
			renew := time.Until(expires) * 4 / 5
			select {
			case <-ctx.Done():
				return
			case <-time.After(renew):
			}
			if expires, err = a.writeToken(ctx, pod, dir); err != nil {
				klog.FromContext(ctx).Error(err, "Renew service account token", "pod", klog.KObj(pod))
				expires = time.Now().Add(10 * time.Second)
			}
		}
	}()
	return dir, nil
}

func (a *Agent) writeToken(ctx context.Context, pod *corev1.Pod, dir string) (time.Time, error) {
	seconds := int64(tokenExpiration / time.Second)
	tr, err := a.cfg.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &seconds,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return time.Time{}, fmt.Errorf("service account %s token: %w", pod.Spec.ServiceAccountName, err)
	}
	tmp := filepath.Join(dir, ".token.tmp")
	if err := os.WriteFile(tmp, []byte(tr.Status.Token), 0o600); err != nil {
		return time.Time{}, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "token")); err != nil {
		return time.Time{}, err
	}
	return tr.Status.ExpirationTimestamp.Time, nil
}
