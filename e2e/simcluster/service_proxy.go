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

package simcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// serviceProxy is the simulated cluster's service network as the API server sees it. There is no kube-proxy
// (and EndpointSlices refuse the pods' loopback addresses), so kube-apiserver's egress selector sends its
// connections into the cluster (a webhook at its Service) to this HTTP CONNECT proxy, as it would to a
// konnectivity proxy; the proxy maps the Service's cluster IP and port to a ready pod the Service selects, and
// relays the bytes. TLS stays end to end: the API server verifies the webhook's serving certificate.
type serviceProxy struct {
	listener net.Listener
	client   atomic.Pointer[kubernetes.Clientset]
	wg       sync.WaitGroup
}

// startServiceProxy listens on a unix socket in dir until close (kube-apiserver's HTTP CONNECT egress over TCP
// insists on TLS to the proxy; over a unix socket it takes none).
func startServiceProxy(dir string) (*serviceProxy, error) {
	path := filepath.Join(dir, "services.sock")
	if len(path) >= 104 {
		return nil, fmt.Errorf("service proxy socket %s: longer than a unix socket address may be", path)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("service proxy: %w", err)
	}
	p := &serviceProxy{listener: l}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// egressSelectorFlag writes the API server's egress selector configuration (its cluster traffic through the
// proxy) into dir and returns the flag that reads it.
func (p *serviceProxy) egressSelectorFlag(dir string) (string, error) {
	path := filepath.Join(dir, "egress-selector.yaml")
	config := fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, p.listener.Addr())
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return "", err
	}
	return "--egress-selector-config-file=" + path, nil
}

// setClient gives the proxy the client it reads Services and pods with, once the API server runs.
func (p *serviceProxy) setClient(c *kubernetes.Clientset) { p.client.Store(c) }

func (p *serviceProxy) close() {
	_ = p.listener.Close()
	p.wg.Wait()
}

func (p *serviceProxy) serve() {
	defer p.wg.Done()
	for {
		conn, err := p.listener.Accept()
		if err != nil {
			return
		}
		go p.handle(conn)
	}
}

// handle answers one CONNECT: 200 and a relay to the Service's pod, or 502 saying why there is none.
func (p *serviceProxy) handle(conn net.Conn) {
	defer func() { _ = conn.Close() }()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	reader := bufio.NewReader(conn)
	req, err := http.ReadRequest(reader)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(conn, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	target, err := p.resolve(ctx, req.Host)
	var backend net.Conn
	if err == nil {
		backend, err = (&net.Dialer{}).DialContext(ctx, "tcp", target)
	}
	cancel()
	if err != nil {
		_, _ = fmt.Fprintf(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n\r\n%s: %v", req.Host, err)
		return
	}
	defer func() { _ = backend.Close() }()
	_ = conn.SetReadDeadline(time.Time{})
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		// What the client sent behind its CONNECT is in the reader's buffer.
		_, _ = io.Copy(backend, reader)
		if c, ok := backend.(interface{ CloseWrite() error }); ok {
			_ = c.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(conn, backend)
		if c, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = c.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
}

// resolve maps a Service's cluster IP and port (what kube-apiserver's service resolver dials) to the address of
// a ready pod the Service selects, at the container port its target port names.
func (p *serviceProxy) resolve(ctx context.Context, hostPort string) (string, error) {
	client := p.client.Load()
	if client == nil {
		return "", errors.New("the API server is not up yet")
	}
	host, portText, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return "", fmt.Errorf("port %q: %w", portText, err)
	}
	services, err := client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for i := range services.Items {
		svc := &services.Items[i]
		if svc.Spec.ClusterIP != host {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if int(sp.Port) == port {
				return p.backend(ctx, svc, sp)
			}
		}
		return "", fmt.Errorf("service %s/%s has no port %d", svc.Namespace, svc.Name, port)
	}
	return "", fmt.Errorf("no service has cluster IP %s", host)
}

// backend is a ready pod of the Service at the service port's target.
func (p *serviceProxy) backend(ctx context.Context, svc *corev1.Service, sp corev1.ServicePort) (string, error) {
	if len(svc.Spec.Selector) == 0 {
		return "", fmt.Errorf("service %s/%s selects no pods", svc.Namespace, svc.Name)
	}
	pods, err := p.client.Load().CoreV1().Pods(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		return "", err
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.PodIP == "" || pod.DeletionTimestamp != nil || !podReady(pod) {
			continue
		}
		if target, ok := targetPort(pod, sp); ok {
			return net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(target)), nil
		}
	}
	return "", fmt.Errorf("service %s/%s has no ready pod", svc.Namespace, svc.Name)
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// targetPort is the pod's port a service port sends to: its number, or the container port of its name.
func targetPort(pod *corev1.Pod, sp corev1.ServicePort) (int, bool) {
	switch {
	case sp.TargetPort.StrVal != "":
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == sp.TargetPort.StrVal {
					return int(cp.ContainerPort), true
				}
			}
		}
		return 0, false
	case sp.TargetPort.IntVal != 0:
		return int(sp.TargetPort.IntVal), true
	default:
		return int(sp.Port), true
	}
}
