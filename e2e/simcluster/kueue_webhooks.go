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
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The names of the webhook configurations StartKueue registers.
const (
	kueueMutatingWebhooks   = "kueue-mutating-webhook-configuration"
	kueueValidatingWebhooks = "kueue-validating-webhook-configuration"
)

// kueueWebhookPaths are the paths of Kueue's webhooks StartKueue registers:
// Kueue's own kinds (defaulting and validation) and batch/v1 Jobs (the only
// integration the simulated cluster's Kueue runs; the mutating one suspends a
// queued Job at creation, before the Job controller makes its pods). The other
// integrations' webhooks are left out: their kinds are not installed.
func isKueueWebhookPath(path string) bool {
	return strings.Contains(path, "-kueue-x-k8s-io-") || strings.HasSuffix(path, "-batch-v1-job")
}

// webhookCerts are a CA and a serving certificate for 127.0.0.1 in dir
// (tls.crt, tls.key: the names Kueue's webhook server reads).
type webhookCerts struct {
	dir   string
	caPEM []byte
}

func newWebhookCerts(dir string) (*webhookCerts, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "simcluster-kueue-webhook-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	return &webhookCerts{dir: dir, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}, nil
}

// KueueMetricsCertDir is where Kueue's command reads its metrics server's
// certificate when its internal certificate management is off, whatever its
// metrics configuration says (a fixed path in cmd/kueue/main.go of v0.17.0; it
// exits when the files are missing).
const KueueMetricsCertDir = "/etc/kueue/metrics/certs"

// ensureKueueMetricsCerts leaves a loadable certificate pair in
// KueueMetricsCertDir (metrics are off, so any valid pair serves), writing one
// when there is none.
func ensureKueueMetricsCerts() error {
	crt, key := filepath.Join(KueueMetricsCertDir, "tls.crt"), filepath.Join(KueueMetricsCertDir, "tls.key")
	if _, err := tls.LoadX509KeyPair(crt, key); err == nil {
		return nil
	}
	tmp, err := os.MkdirTemp("", "kueue-metrics")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if _, err := newWebhookCerts(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(KueueMetricsCertDir, 0o755); err != nil {
		return fmt.Errorf("kueue %s reads a metrics certificate from %s when its internal certificate management is off, even with metrics off, and exits without one; write tls.crt and tls.key there (or run as a user who may): %w", KueueVersion, KueueMetricsCertDir, err)
	}
	for _, name := range []string{"tls.key", "tls.crt"} {
		data, err := os.ReadFile(filepath.Join(tmp, name))
		if err != nil {
			return err
		}
		dst := filepath.Join(KueueMetricsCertDir, name)
		if err := os.WriteFile(dst+".tmp", data, 0o600); err != nil {
			return fmt.Errorf("write Kueue's metrics certificate %s: %w", dst, err)
		}
		if err := os.Rename(dst+".tmp", dst); err != nil {
			return err
		}
	}
	return nil
}

// registerKueueWebhooks registers the webhooks of Kueue's
// config/components/webhook/manifests.yaml that isKueueWebhookPath selects,
// calling baseURL+path with caPEM. The Job webhooks skip kube-system, Kueue's
// namespace and the operator's, as Kueue's own install does for its namespace.
func registerKueueWebhooks(ctx context.Context, c *Cluster, moduleDir, baseURL string, caPEM []byte) error {
	manifest := filepath.Join(moduleDir, "config", "components", "webhook", "manifests.yaml")
	data, err := os.ReadFile(manifest)
	if err != nil {
		return fmt.Errorf("read Kueue's webhook manifests: %w", err)
	}
	objs, err := DecodeManifests(data)
	if err != nil {
		return fmt.Errorf("%s: %w", manifest, err)
	}
	skipNamespaces := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn,
		Values: []string{"kube-system", KueueNamespace, OperatorNamespace},
	}}}
	clientConfig := func(cc admissionv1.WebhookClientConfig) admissionv1.WebhookClientConfig {
		url := baseURL + *cc.Service.Path
		return admissionv1.WebhookClientConfig{URL: &url, CABundle: caPEM}
	}
	var mutating *admissionv1.MutatingWebhookConfiguration
	var validating *admissionv1.ValidatingWebhookConfiguration
	for _, o := range objs {
		switch o.GetKind() {
		case "MutatingWebhookConfiguration":
			in := &admissionv1.MutatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, in); err != nil {
				return fmt.Errorf("%s: %w", manifest, err)
			}
			mutating = &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: kueueMutatingWebhooks}}
			for _, w := range in.Webhooks {
				if w.ClientConfig.Service == nil || w.ClientConfig.Service.Path == nil || !isKueueWebhookPath(*w.ClientConfig.Service.Path) {
					continue
				}
				w.ClientConfig = clientConfig(w.ClientConfig)
				if strings.HasSuffix(w.Name, "job.kb.io") {
					w.NamespaceSelector = skipNamespaces
				}
				mutating.Webhooks = append(mutating.Webhooks, w)
			}
		case "ValidatingWebhookConfiguration":
			in := &admissionv1.ValidatingWebhookConfiguration{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, in); err != nil {
				return fmt.Errorf("%s: %w", manifest, err)
			}
			validating = &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: kueueValidatingWebhooks}}
			for _, w := range in.Webhooks {
				if w.ClientConfig.Service == nil || w.ClientConfig.Service.Path == nil || !isKueueWebhookPath(*w.ClientConfig.Service.Path) {
					continue
				}
				w.ClientConfig = clientConfig(w.ClientConfig)
				if strings.HasSuffix(w.Name, "job.kb.io") {
					w.NamespaceSelector = skipNamespaces
				}
				validating.Webhooks = append(validating.Webhooks, w)
			}
		}
	}
	if mutating == nil || validating == nil || len(mutating.Webhooks) == 0 || len(validating.Webhooks) == 0 {
		return fmt.Errorf("%s: no Kueue or batch/v1 Job webhooks found in its Mutating- and ValidatingWebhookConfiguration", manifest)
	}
	api := c.Client().AdmissionregistrationV1()
	unregisterKueueWebhooks(ctx, c)
	if _, err := api.MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("register Kueue's mutating webhooks: %w", err)
	}
	if _, err := api.ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("register Kueue's validating webhooks: %w", err)
	}
	return nil
}

// unregisterKueueWebhooks deletes what registerKueueWebhooks made (best effort).
func unregisterKueueWebhooks(ctx context.Context, c *Cluster) {
	api := c.Client().AdmissionregistrationV1()
	_ = api.MutatingWebhookConfigurations().Delete(ctx, kueueMutatingWebhooks, metav1.DeleteOptions{})
	_ = api.ValidatingWebhookConfigurations().Delete(ctx, kueueValidatingWebhooks, metav1.DeleteOptions{})
}
