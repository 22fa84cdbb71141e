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

package metering

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/computedomain-operator/computedomain-operator/internal/usage"
)

// PluginPods finds the GPU plugins as the pods of the kubelet-plugin
// DaemonSet: running pods in Namespace matching Selector, at PodIP:Port.
type PluginPods struct {
	Client    kubernetes.Interface
	Namespace string
	Selector  string
	Port      int
}

// Endpoints implements Discoverer.
func (p PluginPods) Endpoints(ctx context.Context) ([]Endpoint, error) {
	pods, err := p.Client.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{LabelSelector: p.Selector})
	if err != nil {
		return nil, fmt.Errorf("list plugin pods in %s (%s): %w", p.Namespace, p.Selector, err)
	}
	var out []Endpoint
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || pod.Spec.NodeName == "" || pod.DeletionTimestamp != nil {
			continue
		}
		out = append(out, Endpoint{Node: pod.Spec.NodeName, Pod: PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}, URL: "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(p.Port)) + usage.Path})
	}
	return out, nil
}

// APIJoiner reads teams and pods from the API server.
type APIJoiner struct {
	Client kubernetes.Interface
	// TeamLabel is the namespace label naming its team.
	TeamLabel string
}

// Team implements Joiner.
func (j APIJoiner) Team(ctx context.Context, namespace string) (string, error) {
	ns, err := j.Client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("get namespace %s: %w", namespace, err)
	}
	return ns.Labels[j.TeamLabel], nil
}

// Pods implements Joiner.
func (j APIJoiner) Pods(ctx context.Context, namespace, name string) ([]string, error) {
	claim, err := j.Client.ResourceV1().ResourceClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get resourceclaim %s/%s: %w", namespace, name, err)
	}
	var pods []string
	for _, r := range claim.Status.ReservedFor {
		if r.Resource == "pods" {
			pods = append(pods, r.Name)
		}
	}
	return pods, nil
}

// HTTPFetcher reads ledgers over HTTP.
type HTTPFetcher struct {
	Client *http.Client
}

// Fetch implements Fetcher.
func (f HTTPFetcher) Fetch(ctx context.Context, url string, after uint64) (usage.Page, error) {
	c := f.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"?after="+strconv.FormatUint(after, 10), nil)
	if err != nil {
		return usage.Page{}, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return usage.Page{}, fmt.Errorf("get %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return usage.Page{}, fmt.Errorf("get %s: %s: %s", url, resp.Status, body)
	}
	var page usage.Page
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		return usage.Page{}, fmt.Errorf("decode %s: %w", url, err)
	}
	if page.Ledger == "" {
		return usage.Page{}, fmt.Errorf("%s: the answer names no ledger", url)
	}
	return page, nil
}
