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
// certificate, CA data and TLS server name) to path, creating its directory.
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
