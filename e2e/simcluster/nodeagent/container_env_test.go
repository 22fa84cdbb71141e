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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func daemonPod() *corev1.Pod {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "daemon-x", Namespace: "ops", UID: "uid-1"},
		Spec: corev1.PodSpec{
			NodeName: "gb200-r0-n01",
			Volumes: []corev1.Volume{
				{Name: "plugins", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet/plugins"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Containers: []corev1.Container{{
				Name:    "daemon",
				Command: []string{"/bin/daemon"},
				Args:    []string{"--node-name=$(NODE_NAME)", "--ip-address=$(POD_IP)", "--state=/plugins/cd/state", "--tmp=/scratch", "--other=/etc/x", "$(LEVEL)"},
				Env:     []corev1.EnvVar{field("NODE_NAME", "spec.nodeName"), field("POD_IP", "status.podIP"), {Name: "LEVEL", Value: "-v=$(DEPTH)"}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "plugins", MountPath: "/plugins"},
					{Name: "scratch", MountPath: "/scratch"},
				},
			}},
		},
	}
}

func TestContainerView(t *testing.T) {
	pod := daemonPod()
	a := &Agent{cfg: Config{Paths: PathsFor("/sim/nodes/n1")}, nodeIP: "127.0.1.2", podIPs: mustPodAddresses(t, "127.0.1.2")}
	got, err := a.buildContainer(pod, &pod.Spec.Containers[0], ContainerEdits{
		Env:    []string{"IMEX_DIR=/etc/imex", "POD_IP=overridden-by-cdi"},
		Mounts: []Mount{{ContainerPath: "/etc/imex", HostPath: "/sim/nodes/n1/var/lib/kubelet/plugins/cd/domain-1"}},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct{ got, want any }{
		"field references resolve, CDI variables come last and win, paths under CDI mounts map to their host path": {
			got: got.Env,
			want: map[string]string{
				"NODE_NAME": "gb200-r0-n01", "POD_IP": "overridden-by-cdi", "LEVEL": "-v=$(DEPTH)",
				"IMEX_DIR": "/sim/nodes/n1/var/lib/kubelet/plugins/cd/domain-1",
			},
		},
		"args expand the spec's variables (not CDI's) and map paths under mounts onto the host root": {
			got: got.Args,
			want: []string{
				"/bin/daemon", "--node-name=gb200-r0-n01", "--ip-address=127.1.2.1",
				"--state=/sim/nodes/n1/var/lib/kubelet/plugins/cd/state",
				"--tmp=/sim/nodes/n1/var/lib/kubelet/pods/uid-1/volumes/empty-dir/scratch",
				"--other=/etc/x", "-v=$(DEPTH)",
			},
		},
		"volume mounts land under the node root, CDI mounts keep their host path": {
			got: got.Mounts,
			want: map[string]string{
				"/plugins":  "/sim/nodes/n1/var/lib/kubelet/plugins",
				"/scratch":  "/sim/nodes/n1/var/lib/kubelet/pods/uid-1/volumes/empty-dir/scratch",
				"/etc/imex": "/sim/nodes/n1/var/lib/kubelet/plugins/cd/domain-1",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContainerViewRefusesWhatANodeCannotResolve(t *testing.T) {
	cases := map[string]func(*corev1.Pod){
		"a configMap volume": func(p *corev1.Pod) {
			p.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}
		},
		"an unknown field path": func(p *corev1.Pod) {
			p.Spec.Containers[0].Env[0].ValueFrom.FieldRef.FieldPath = "metadata.labels['x']"
		},
		"a configMap env source": func(p *corev1.Pod) {
			p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}}}}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			pod := daemonPod()
			mutate(pod)
			a := &Agent{cfg: Config{Paths: PathsFor("/sim/nodes/n1")}, nodeIP: "127.0.1.2", podIPs: mustPodAddresses(t, "127.0.1.2")}
			if _, err := a.buildContainer(pod, &pod.Spec.Containers[0], ContainerEdits{}, ""); err == nil {
				t.Fatal("buildContainer() succeeded, want an error")
			}
		})
	}
}

// pluginPod is the shape of the chart's kubelet-plugin pod: the host's /dev,
// /proc and /sys under /host, listen addresses without a host, a service
// account.
func pluginPod() *corev1.Pod {
	hostPath := func(name, path string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "plugin-x", Namespace: "ops", UID: "uid-2"},
		Spec: corev1.PodSpec{
			NodeName:           "gb200-r0-n01",
			ServiceAccountName: "plugin",
			Volumes:            []corev1.Volume{hostPath("dev", "/dev"), hostPath("proc", "/proc"), hostPath("sys", "/sys"), hostPath("driver", "/")},
			Containers: []corev1.Container{{
				Name:    "plugin",
				Command: []string{"gpu-kubelet-plugin"},
				Args:    []string{"--host-root=/host", "--driver-root=/driver-root", "--metrics-address=:9090", "--peer=127.0.0.1:9090", "--odd=:http"},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "dev", MountPath: "/host/dev"}, {Name: "proc", MountPath: "/host/proc"}, {Name: "sys", MountPath: "/host/sys"},
					{Name: "driver", MountPath: "/driver-root"},
				},
			}},
		},
	}
}

func TestPluginContainerView(t *testing.T) {
	pod := pluginPod()
	a := &Agent{
		cfg:    Config{Paths: PathsFor("/sim/nodes/n1"), APIServer: APIServer{Host: "127.0.0.1", Port: "6443"}},
		nodeIP: "127.0.1.2", podIPs: mustPodAddresses(t, "127.0.1.2"),
	}
	got, err := a.buildContainer(pod, &pod.Spec.Containers[0], ContainerEdits{}, "/sim/nodes/n1/var/lib/kubelet/pods/uid-2/volumes/kubernetes.io~projected/kube-api-access")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct{ got, want any }{
		"a directory holding mounts of one host directory maps to it; listen addresses without a host get the pod's IP, others stay": {
			got:  got.Args,
			want: []string{"gpu-kubelet-plugin", "--host-root=/sim/nodes/n1", "--driver-root=/sim/nodes/n1", "--metrics-address=127.1.2.1:9090", "--peer=127.0.0.1:9090", "--odd=:http"},
		},
		"the service account token is mounted where in-cluster clients look for it": {
			got:  got.Mounts[ServiceAccountMountPath],
			want: "/sim/nodes/n1/var/lib/kubelet/pods/uid-2/volumes/kubernetes.io~projected/kube-api-access",
		},
		"the API server's address is in the service environment": {
			got:  []string{got.Env["KUBERNETES_SERVICE_HOST"], got.Env["KUBERNETES_SERVICE_PORT"]},
			want: []string{"127.0.0.1", "6443"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMountParentNeedsOneHostDirectory(t *testing.T) {
	mounts := map[string]string{"/host/dev": "/n1/dev", "/host/etc": "/elsewhere/etc"}
	if got := mapPath(mounts, "/host"); got != "/host" {
		t.Errorf("mapPath(/host) = %s, want /host unchanged: its mounts come from two host directories", got)
	}
}

func TestSecretFiles(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls"}, Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}
	all, err := secretFiles("certs", &corev1.SecretVolumeSource{SecretName: "tls"}, secret)
	if err != nil || len(all) != 2 || string(all["tls.key"]) != "k" {
		t.Errorf("every key a file: %v %v", all, err)
	}
	items, err := secretFiles("certs", &corev1.SecretVolumeSource{SecretName: "tls", Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "dir/cert.pem"}}}, secret)
	if err != nil || len(items) != 1 || string(items["dir/cert.pem"]) != "c" {
		t.Errorf("items at their paths: %v %v", items, err)
	}
	if _, err := secretFiles("certs", &corev1.SecretVolumeSource{Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca"}}}, secret); err == nil || !strings.Contains(err.Error(), `items[0].key "ca.crt"`) {
		t.Errorf("a missing key: %v, want an error naming the item", err)
	}
	if _, err := secretFiles("certs", &corev1.SecretVolumeSource{Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "../escape"}}}, secret); err == nil || !strings.Contains(err.Error(), "items[0].path") {
		t.Errorf("a path out of the volume: %v, want an error naming the item", err)
	}
	optional := true
	if files, err := secretFiles("certs", &corev1.SecretVolumeSource{Optional: &optional, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca"}}}, secret); err != nil || len(files) != 0 {
		t.Errorf("an optional volume's missing key is left out: %v %v", files, err)
	}
}

func TestProbeURL(t *testing.T) {
	c := &corev1.Container{Name: "webhook", Ports: []corev1.ContainerPort{{Name: "https", ContainerPort: 9443}}}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("https"), Scheme: corev1.URISchemeHTTPS}}}
	if got, err := probeURL(c, "127.1.4.1"); err != nil || got != "https://127.1.4.1:9443/healthz" {
		t.Errorf("named port: %q %v", got, err)
	}
	c.ReadinessProbe.HTTPGet.Port, c.ReadinessProbe.HTTPGet.Scheme = intstr.FromInt32(8081), ""
	if got, err := probeURL(c, "127.1.4.1"); err != nil || got != "http://127.1.4.1:8081/healthz" {
		t.Errorf("numbered port: %q %v", got, err)
	}
	c.ReadinessProbe.HTTPGet.Port = intstr.FromString("probes")
	if _, err := probeURL(c, "127.1.4.1"); err == nil || !strings.Contains(err.Error(), `readinessProbe.httpGet.port "probes"`) {
		t.Errorf("an unknown port name: %v, want an error naming the field", err)
	}
}
