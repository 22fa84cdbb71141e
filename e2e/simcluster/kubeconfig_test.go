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
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestTheUsersKubeconfigActsAsAClusterAdminNotAsTheAPIServer: the kubeconfig `simcluster up` writes
// impersonates kubernetes-admin (system:masters), so kubectl's requests reach admission as a user's do on a
// real cluster; with the loopback identity (system:apiserver) the chart's opaque-config webhook, which trusts
// the API server's own requests, let every bad config through.
func TestTheUsersKubeconfigActsAsAClusterAdminNotAsTheAPIServer(t *testing.T) {
	loopback := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "loopback-token"}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(UserConfig(loopback), path); err != nil {
		t.Fatal(err)
	}
	got, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Impersonate.UserName != "kubernetes-admin" || !slices.Equal(got.Impersonate.Groups, []string{"system:masters"}) || got.BearerToken != "loopback-token" {
		t.Errorf("kubeconfig acts as %+v with token %q, want kubernetes-admin in system:masters through the loopback token", got.Impersonate, got.BearerToken)
	}
	if loopback.Impersonate.UserName != "" {
		t.Error("UserConfig changed the configuration it was given")
	}
}
