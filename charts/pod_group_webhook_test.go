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

package charts

import (
	"context"
	"crypto/tls"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	webhookapp "github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-webhook/app"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
	"github.com/computedomain-operator/computedomain-operator/internal/workloadapi"
)

// TestPodGroupWebhookJoinsNVIDIAStylePods installs the chart's MutatingWebhookConfiguration (webhook.podGroups)
// into a real kube-apiserver with the Workload API and the CRDs, runs the webhook binary's Run against it with
// --pod-groups, and creates pods as a Job controller would: an unmodified NVIDIA-style pod that uses a domain's
// channel template joins the domain's PodGroup.
func TestPodGroupWebhookJoinsNVIDIAStylePods(t *testing.T) {
	scheme, err := envtest.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	env, cfg := startWithPodWebhook(t, defaultPodWebhook(t), scheme)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := writeKubeconfig(cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	serveWebhook(ctx, t, env, "--pod-groups", "--kubeconfig="+kubeconfig)

	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, cd := range []client.Object{
		utiltesting.MakeComputeDomain("gang", "team-a").Channel("gang-channel").NumNodes(4).Obj(),
		utiltesting.MakeComputeDomain("elastic", "team-a").Channel("elastic-channel").Obj(),
	} {
		if err := c.Create(ctx, cd); err != nil {
			t.Fatal(err)
		}
	}
	// Created right after its domain, as one `kubectl apply -f` of both does: the webhook's cache may not have
	// the domain yet, and the pod joins its PodGroup all the same (the webhook then asks the API server).
	nvidiaStyle := func(name string, templates ...string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "ctr", Image: "ubuntu:24.04"}}},
		}
		for i, tmpl := range templates {
			name := "claim-" + strconv.Itoa(i)
			p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimTemplateName: ptr.To(tmpl)})
			p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: name})
		}
		return p
	}
	pods := kube.CoreV1().Pods("team-a")
	joined, err := pods.Create(ctx, nvidiaStyle("nccl-0", "four-gpus", "gang-channel"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := workloadapi.PodGroupName(&joined.Spec); got != "gang" {
		t.Errorf("the first pod, created right after its domain: podGroupName %q, want the domain's name %q", got, "gang")
	}

	cases := map[string]struct {
		pod  *corev1.Pod
		want string
	}{
		"a pod of a domain without numNodes is not joined (the controller makes no PodGroup for it)": {
			pod: nvidiaStyle("elastic-0", "elastic-channel"),
		},
		"a pod without a domain's template is not joined": {
			pod: nvidiaStyle("plain-0", "four-gpus"),
		},
		"a pod that names its own PodGroup keeps it": {
			pod: func() *corev1.Pod {
				p := nvidiaStyle("own-0", "gang-channel")
				workloadapi.JoinPodGroup(&p.Spec, "mine")
				return p
			}(),
			want: "mine",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := pods.Create(ctx, tc.pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := workloadapi.PodGroupName(&p.Spec); got != tc.want {
				t.Errorf("podGroupName %q, want %q", got, tc.want)
			}
		})
	}
}

// serveWebhook runs the webhook binary's Run with args at the environment's local serving address until ctx
// ends, and returns once it listens; what Run returns comes on the channel.
func serveWebhook(ctx context.Context, t *testing.T, env *ctrlenvtest.Environment, args ...string) <-chan error {
	t.Helper()
	opts := env.WebhookInstallOptions
	served := make(chan error, 1)
	go func() {
		served <- webhookapp.Run(ctx, append([]string{"--host=" + opts.LocalServingHost, "--port=" + strconv.Itoa(opts.LocalServingPort),
			"--cert-dir=" + opts.LocalServingCertDir}, args...))
	}()
	addr := net.JoinHostPort(opts.LocalServingHost, strconv.Itoa(opts.LocalServingPort))
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, webhookStartTimeout, true, func(context.Context) (bool, error) {
		select {
		case err := <-served:
			t.Fatalf("webhook ended: %v", err)
		default:
		}
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only checks that it listens
		if err != nil {
			return false, nil
		}
		return true, conn.Close()
	}); err != nil {
		t.Fatalf("webhook never listened on %s: %v", addr, err)
	}
	return served
}

// TestAPodWebhookWhosePodIsGoneExits runs the webhook with its pod's service account token, bound to the pod as
// the kubelet's is, and deletes the pod, as a force-deletion does while the process runs on (its node's kubelet
// gone): the API server refuses the token from then on, and the webhook exits instead of answering every pod
// with that refusal. While the pod exists it runs on.
func TestAPodWebhookWhosePodIsGoneExits(t *testing.T) {
	scheme, err := envtest.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	env, cfg := startWithPodWebhook(t, defaultPodWebhook(t), scheme)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const ns, sa, podName = "computedomain-operator", "compute-domain-webhook", "compute-domain-webhook-0"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What the account may do is not under test here (the chart's RBAC tests cover it).
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName},
		Spec:       corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "webhook", Image: "compute-domain-webhook"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](3607),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := writeKubeconfig(&rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}, BearerToken: token.Status.Token}, kubeconfig); err != nil {
		t.Fatal(err)
	}

	const giveUp = 4 * time.Second
	served := serveWebhook(ctx, t, env, "--pod-groups", "--kubeconfig="+kubeconfig, "--credential-give-up="+giveUp.String())
	select {
	case err := <-served:
		t.Fatalf("the webhook ended while its pod exists: %v", err)
	case <-time.After(2 * giveUp):
	}

	if err := kube.CoreV1().Pods(ns).Delete(ctx, podName, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	select {
	case err := <-served:
		if err == nil || !strings.Contains(err.Error(), "refused this process's credentials") {
			t.Fatalf("the webhook ended with %v, want the API server's refusal of its credentials", err)
		}
		t.Logf("ended %s after its pod was deleted: %v", time.Since(deleted).Round(time.Second), err)
	case <-ctx.Done():
		t.Fatal("the webhook whose pod is gone runs on")
	}
}

// startWithPodWebhook starts kube-apiserver with the Workload API, our CRDs and hooks installed (pointed at the
// environment's local serving address, where nothing serves until the test starts a webhook), stopped with t.
func startWithPodWebhook(t *testing.T, hooks []*admissionv1.MutatingWebhookConfiguration, scheme *runtime.Scheme) (*ctrlenvtest.Environment, *rest.Config) {
	t.Helper()
	root, err := envtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	assets, err := envtest.BinaryAssetsDir(root)
	if err != nil {
		t.Fatal(err)
	}
	env := &ctrlenvtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, envtest.CRDDir)},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		WebhookInstallOptions: ctrlenvtest.WebhookInstallOptions{MutatingWebhooks: hooks},
	}
	envtest.WithWorkloadAPI()(env)
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return env, cfg
}

// defaultPodWebhook is the pod webhook of a default install: on, while the opaque-config webhook stays off.
func defaultPodWebhook(t *testing.T) []*admissionv1.MutatingWebhookConfiguration {
	t.Helper()
	objs := renderChart(t, "computedomain-operator")
	var hooks []*admissionv1.MutatingWebhookConfiguration
	for _, o := range byKind(objs, "MutatingWebhookConfiguration") {
		var mwc admissionv1.MutatingWebhookConfiguration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &mwc); err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, &mwc)
	}
	if len(hooks) != 1 || len(hooks[0].Webhooks) != 1 {
		t.Fatalf("a default install: want one MutatingWebhookConfiguration with the pod webhook, got %d", len(hooks))
	}
	if got := byKind(objs, "ValidatingWebhookConfiguration"); len(got) != 0 {
		t.Errorf("a default install has the opaque-config webhook (%d), which stays off by default", len(got))
	}
	return hooks
}

// TestThePodWebhookIsNeverCalledForPodsWithoutAClaimTemplate installs a default install's pod webhook with
// failurePolicy Fail and no webhook serving: a pod the API server would send is refused, so every pod admitted
// here was never sent. Pods without a claim template, with their own scheduling group, or of no workload at all
// never wait for the webhook, nor fail with it.
func TestThePodWebhookIsNeverCalledForPodsWithoutAClaimTemplate(t *testing.T) {
	hooks := defaultPodWebhook(t)
	hooks[0].Webhooks[0].FailurePolicy = ptr.To(admissionv1.Fail)
	scheme, err := envtest.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	_, cfg := startWithPodWebhook(t, hooks, scheme)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod := func(name string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ctr", Image: "ubuntu:24.04"}}}}
		mutate(p)
		return p
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		sent bool
	}{
		"a pod without claims": {pod: pod("plain", func(*corev1.Pod) {})},
		"a pod with a claim of its own name, no template": {pod: pod("named-claim", func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("shared-gpu")}}
		})},
		"a pod that names its own scheduling group": {pod: pod("own-group", func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "ch", ResourceClaimTemplateName: ptr.To("gang-channel")}}
			workloadapi.JoinPodGroup(&p.Spec, "mine")
		})},
		"a pod with a claim template is sent (and refused here, since nothing serves the webhook)": {pod: pod("templated", func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "ch", ResourceClaimTemplateName: ptr.To("gang-channel")}}
		}), sent: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := kube.CoreV1().Pods("default").Create(ctx, tc.pod, metav1.CreateOptions{})
			switch {
			case tc.sent && err == nil:
				t.Fatal("admitted; want it sent to the (absent) webhook and refused")
			case tc.sent && !strings.Contains(err.Error(), "pods.pod-groups.resource.nvidia.com"):
				t.Fatalf("refused for another reason: %v", err)
			case !tc.sent && err != nil:
				t.Fatalf("sent to the webhook: %v", err)
			}
		})
	}
}

// writeKubeconfig writes a kubeconfig for cfg (envtest's admin user, client certificates) to path.
func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}
