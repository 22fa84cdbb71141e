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
