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

package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"

	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain"
)

func TestFlags(t *testing.T) {
	cases := map[string]struct {
		args    []string
		want    computedomain.Config
		wantErr string
	}{
		"the required flags and defaults for everything else": {
			args: []string{"--namespace=nvidia-dra"},
			want: computedomain.Config{
				OperatorNamespace: "nvidia-dra", DriverName: "compute-domain.nvidia.com",
				ChannelDeviceClass: "compute-domain-default-channel.nvidia.com",
				MaxNodesPerClique:  18, MaxChannels: 2048, StatusWriteInterval: 500 * time.Millisecond,
				GPUDriverName: "gpu.nvidia.com",
			},
		},
		"an isolated install with its own driver and classes": {
			args: []string{"--namespace=sim", "--driver-name=cd.sim.example.com",
				"--channel-device-class=ch.sim", "--max-nodes-per-clique=4", "--clique-placement-fallback", "--gpu-driver-name=gpu.sim.example.com"},
			want: computedomain.Config{
				OperatorNamespace: "sim", DriverName: "cd.sim.example.com",
				ChannelDeviceClass: "ch.sim",
				MaxNodesPerClique:  4, MaxChannels: 2048, StatusWriteInterval: 500 * time.Millisecond,
				CliquePlacement: true, GPUDriverName: "gpu.sim.example.com",
			},
		},
		"no namespace": {args: []string{}, wantErr: "--namespace: must be set"},
		"a flag of the retired per-domain IMEX mode": {args: []string{"--namespace=a", "--imex-mode=Domain"}, wantErr: "flag provided but not defined: -imex-mode"},
		"a stray argument":                           {args: []string{"--namespace=a", "extra"}, wantErr: "unexpected arguments"},
		"zero workers":                               {args: []string{"--namespace=a", "--workers=0"}, wantErr: "--workers: 0"},
		"a zero-node clique cap":                     {args: []string{"--namespace=a", "--max-nodes-per-clique=0"}, wantErr: "--max-nodes-per-clique: 0"},
	}
	t.Setenv("POD_NAMESPACE", "")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := parse(tc.args)
			var cfg computedomain.Config
			if err == nil {
				cfg, err = o.controllerConfig()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cfg); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOneRateLimitForAllClients sends requests for three kinds through a controller-runtime client made from one
// configuration, which makes a REST client per kind: with one limit for all, the third request waits for the
// limit's refill whatever its kind; with a limiter per REST client (client-go's default) none waits.
func TestOneRateLimitForAllClients(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	defer server.Close()
	cfg := &rest.Config{Host: server.URL}
	// Two requests at once, then 4 a second: the third waits about 250 ms for the limit.
	const qps, burst = 4, 2
	limitRequests(cfg, qps, burst)
	scheme, err := kubescheme.New()
	if err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	objects := []client.Object{&corev1.ConfigMap{}, &resourcev1.ResourceClaimTemplate{}, &v1beta1.ComputeDomain{}}
	for _, obj := range objects {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			t.Fatal(err)
		}
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, obj := range objects {
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "a", Name: "x"}, obj); !apierrors.IsNotFound(err) {
			t.Fatalf("get %T: %v, want NotFound", obj, err)
		}
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("three requests of three kinds took %v at %d a second with a burst of %d: each kind has a limit of its own", took, qps, burst)
	}
}
