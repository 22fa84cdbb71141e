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
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// readinessWait bounds how long a starting pod waits for its containers'
// readiness probes before it is reported running with those containers not
// ready.
const readinessWait = 30 * time.Second

// probeReadiness runs the HTTP readiness probes of the pod's in-process
// containers against the pod's address until each succeeds once or
// readinessWait passes, and returns the containers whose probe never did.
// Probes are run once, at start (the kubelet keeps probing); a container
// without an httpGet readiness probe is ready when it runs.
func (a *Agent) probeReadiness(ctx context.Context, pod *corev1.Pod, podIP string) map[string]bool {
	unready := map[string]bool{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || a.cfg.Runtime == nil || !a.cfg.Runtime.Handles(c.Image) {
			continue
		}
		url, err := probeURL(c, podIP)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Readiness probe", "pod", klog.KObj(pod), "container", c.Name)
			unready[c.Name] = true
			continue
		}
		if !waitHTTP(ctx, url, readinessWait) {
			klog.FromContext(ctx).Info("Readiness probe did not succeed", "pod", klog.KObj(pod), "container", c.Name, "url", url, "waited", readinessWait)
			unready[c.Name] = true
		}
	}
	return unready
}

// probeURL is the address an httpGet probe of c asks on the pod's IP, its
// port named or numbered.
func probeURL(c *corev1.Container, podIP string) (string, error) {
	get := c.ReadinessProbe.HTTPGet
	port := get.Port.IntValue()
	if get.Port.StrVal != "" {
		port = 0
		for _, p := range c.Ports {
			if p.Name == get.Port.StrVal {
				port = int(p.ContainerPort)
			}
		}
	}
	if port < 1 || port > 65535 {
		return "", fmt.Errorf("container %s: readinessProbe.httpGet.port %q: no such container port", c.Name, get.Port.String())
	}
	scheme := "http"
	if get.Scheme == corev1.URISchemeHTTPS {
		scheme = "https"
	}
	host := podIP
	if get.Host != "" {
		host = get.Host
	}
	return scheme + "://" + net.JoinHostPort(host, strconv.Itoa(port)) + get.Path, nil
}

// waitHTTP asks url until it answers 2xx or 3xx, within wait. Like the
// kubelet's probes, HTTPS certificates are not verified.
func waitHTTP(ctx context.Context, url string, wait time.Duration) bool {
	client := &http.Client{
		Timeout:   time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // as the kubelet's probes
	}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(wait)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false
		}
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode >= 200 && resp.StatusCode < 400 {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}
