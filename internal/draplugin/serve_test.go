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
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2/ktesting"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin/kubelettest"
)

// fakeDriver prepares nothing and records its publisher.
type fakeDriver struct {
	publishErr error
	published  bool
}

func (*fakeDriver) PrepareResourceClaims(context.Context, []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	return nil, nil
}

func (*fakeDriver) UnprepareResourceClaims(context.Context, []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	return nil, nil
}

func (*fakeDriver) HandleError(context.Context, error, string) {}

func (*fakeDriver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}

func (d *fakeDriver) SetPublisher(context.Context, func(context.Context, resourceslice.DriverResources) error) error {
	d.published = true
	return d.publishErr
}

func TestServe(t *testing.T) {
	cases := map[string]struct {
		metricsAddress string
		publishErr     error
		wantErr        string
		wantPublished  bool
	}{
		"a plugin is registered and handed its publisher":       {metricsAddress: "127.0.0.1:0", wantPublished: true},
		"a bad metrics address fails before anything registers": {metricsAddress: "not-an-address", wantErr: "--metrics-address"},
		"a publisher that fails fails the start":                {publishErr: errors.New("no slices"), wantErr: "publish resources: no slices", wantPublished: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			base, err := os.MkdirTemp("", "dp") // unix socket paths are limited to 108 bytes
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(base) })
			o := Options{DriverName: "example.nvidia.com", NodeName: "tray-1", KubeClient: fake.NewClientset(),
				RegistrarDir: filepath.Join(base, "reg"), PluginsDir: filepath.Join(base, "plg")}
			d := &fakeDriver{publishErr: tc.publishErr}
			helper, err := Serve(ctx, d, o, tc.metricsAddress, prometheus.NewRegistry())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error = %v, want it to contain %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				defer helper.Stop()
				if _, err := os.Stat(filepath.Join(o.RegistrarDir, "example.nvidia.com-reg.sock")); err != nil {
					t.Errorf("registration socket: %v", err)
				}
			}
			if d.published != tc.wantPublished {
				t.Errorf("publisher handed over = %v, want %v", d.published, tc.wantPublished)
			}
		})
	}
}

// TestReadinessFollowsTheKubeletsRegistration: the plugin's pod is ready
// only once the kubelet has registered it, not once its sockets exist; a
// pod prepared before that fails and waits for its resync (60-90 s).
func TestReadinessFollowsTheKubeletsRegistration(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	base, err := os.MkdirTemp("", "dp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	o := Options{DriverName: "example.nvidia.com", NodeName: "tray-1", KubeClient: fake.NewClientset(),
		RegistrarDir: filepath.Join(base, "reg"), PluginsDir: filepath.Join(base, "plg")}
	helper, err := Serve(ctx, &fakeDriver{}, o, addr, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer helper.Stop()
	ready := func() (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + ReadyPath)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	if code, body := ready(); code != http.StatusServiceUnavailable || body != "the kubelet has not registered the plugin yet" {
		t.Errorf("before the kubelet registered the plugin: %d %q, want 503 and why", code, body)
	}
	reg := registerapi.NewRegistrationClient(kubelettest.Dial(t, filepath.Join(o.RegistrarDir, "example.nvidia.com-reg.sock")))
	if _, err := reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{Error: "no such version"}); err == nil {
		t.Error("a refused registration is an error of the call")
	}
	if code, body := ready(); code != http.StatusServiceUnavailable || !strings.Contains(body, "refused the plugin's registration: no such version") {
		t.Errorf("after the kubelet refused the plugin: %d %q, want 503 with the kubelet's error", code, body)
	}
	if _, err := reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	if code, body := ready(); code != http.StatusOK {
		t.Errorf("after the kubelet registered the plugin: %d %q, want 200", code, body)
	}
}
