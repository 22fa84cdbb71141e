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
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig for cfg (bearer token or client
// certificate, impersonation, CA data and TLS server name) to path, creating its directory.
// The file is written to a temporary name first and renamed, so a reader
// never sees half a file.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	const name = "simcluster"
	kc := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = cfg.Host
	cluster.CertificateAuthorityData = cfg.CAData
	cluster.TLSServerName = cfg.ServerName
	cluster.InsecureSkipTLSVerify = cfg.Insecure
	kc.Clusters[name] = cluster
	user := clientcmdapi.NewAuthInfo()
	user.Token = cfg.BearerToken
	user.ClientCertificateData = cfg.CertData
	user.ClientKeyData = cfg.KeyData
	user.Impersonate = cfg.Impersonate.UserName
	user.ImpersonateGroups = cfg.Impersonate.Groups
	kc.AuthInfos[name] = user
	kctx := clientcmdapi.NewContext()
	kctx.Cluster, kctx.AuthInfo = name, name
	kc.Contexts[name] = kctx
	kc.CurrentContext = name

	data, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("encode kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create kubeconfig directory: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return os.Rename(tmp, path)
}

// AdminUser is the identity of the kubeconfig a user gets from `simcluster up`: a cluster admin as kubeadm's
// admin.conf makes one, not the API server's own loopback identity (system:apiserver), which components such
// as the chart's webhook trust as the cluster itself. The loopback identity impersonates it.
var AdminUser = rest.ImpersonationConfig{UserName: "kubernetes-admin", Groups: []string{"system:masters"}}

// UserConfig is cfg acting as AdminUser.
func UserConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = AdminUser
	return cfg
}
