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

package draplugin

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// ReadyPath is the plugin's readiness endpoint on its metrics listener.
const ReadyPath = "/readyz"

// Registration is what the kubelet last told the plugin about its
// registration (NotifyRegistrationStatus). Serving ResourceSlices is not
// enough for a node to use the plugin: until the kubelet's plugin manager
// has registered the new socket (its reconciler runs every second, and a
// restarted plugin is first unregistered), a pod's prepare fails with
// "DRA driver ... is not registered", and the kubelet tries that pod again
// only at its resync, 60-90 s later. As the readiness of the plugin's pod,
// it lets `kubectl rollout status` and a DaemonSet's rolling update wait
// for the kubelet, not for the process.
//
// The helper keeps the status too (Helper.RegistrationStatus), but writes
// it from a gRPC goroutine without synchronization; this records the same
// call through an interceptor, so the HTTP handler reads it safely.
type Registration struct {
	status atomic.Pointer[registerapi.RegistrationStatus]
}

// interceptor records the registration statuses the kubelet sends.
func (r *Registration) interceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if st, ok := req.(*registerapi.RegistrationStatus); ok {
		r.status.Store(&registerapi.RegistrationStatus{PluginRegistered: st.PluginRegistered, Error: st.Error})
	}
	return handler(ctx, req)
}

// Registered says whether the kubelet has registered the plugin, and if
// not, why: nothing heard yet, or the kubelet's error.
func (r *Registration) Registered() (bool, string) {
	st := r.status.Load()
	switch {
	case st == nil:
		return false, "the kubelet has not registered the plugin yet"
	case !st.PluginRegistered:
		return false, fmt.Sprintf("the kubelet refused the plugin's registration: %s", st.Error)
	}
	return true, "registered with the kubelet"
}

// ServeHTTP answers the readiness probe: 200 once the kubelet has
// registered the plugin, 503 with the reason until then.
func (r *Registration) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	ok, msg := r.Registered()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = fmt.Fprintln(w, msg)
}
