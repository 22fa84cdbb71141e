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
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
)

// TestAContainerWithoutATokenRunsAndCannotCallTheAPIServer: a pod with automountServiceAccountToken: false
// (the chart's webhook without webhook.podGroups) starts, as in a real cluster, and an API call from it fails
// naming the missing token file (client-go reads it as the client is built), without reaching the API
// server. It used to be refused at start, so that
// `helm upgrade --set webhook.enabled=true` on make up's cluster left the webhook crash-looping.
func TestAContainerWithoutATokenRunsAndCannotCallTheAPIServer(t *testing.T) {
	calls := 0
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { calls++ }))
	defer api.Close()
	host, port, _ := strings.Cut(strings.TrimPrefix(api.URL, "https://"), ":")
	cfg, err := inClusterConfig(nodeagent.Container{NodeRoot: t.TempDir(), Env: map[string]string{"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// client-go reads the token file when the client is built, as rest.InClusterConfig does at start.
	client, err := kubernetes.NewForConfig(cfg)
	if err == nil {
		_, err = client.Discovery().ServerVersion()
	}
	if err == nil || !strings.Contains(err.Error(), "no-service-account-token/token") {
		t.Errorf("an API call without a token: %v, want an error naming the missing token file", err)
	}
	if calls != 0 {
		t.Errorf("the API server saw %d requests without credentials", calls)
	}
}
