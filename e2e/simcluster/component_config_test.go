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
	"testing"

	"k8s.io/client-go/rest"
)

// The in-process components' configurations share one client-go transport (their connections); a caller's
// (ownConnection) gets one of its own, every time, and shares none.
func TestOwnConnectionSharesNoTransport(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "admin", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	transport := func(cfg *rest.Config) any {
		t.Helper()
		rt, err := rest.TransportFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return rt
	}
	unwrap := func(rt any) any {
		// TransportFor wraps the shared transport (user agent, bearer token): compare what is underneath.
		for {
			w, ok := rt.(interface{ WrappedRoundTripper() http.RoundTripper })
			if !ok {
				return rt
			}
			rt = w.WrappedRoundTripper()
		}
	}
	component := unwrap(transport(rest.CopyConfig(base)))
	if unwrap(transport(rest.CopyConfig(base))) != component {
		t.Fatal("two copies of the components' configuration do not share a transport: the premise of ownConnection is gone")
	}
	own := unwrap(transport(ownConnection(base)))
	if own == component {
		t.Error("ownConnection's transport is the components'")
	}
	if unwrap(transport(ownConnection(base))) == own {
		t.Error("two ownConnection configurations share a transport")
	}
	ownCfg := ownConnection(base)
	if unwrap(transport(ownCfg)) == unwrap(transport(ownCfg)) {
		t.Error("two clients of one ownConnection configuration share a transport")
	}
}
