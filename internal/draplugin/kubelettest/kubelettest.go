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

// Package kubelettest drives a running kubelet plugin from a test the way the
// kubelet does: wait for its registration socket, register it, and talk to
// its DRA socket.
package kubelettest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Timeout bounds every wait in this package.
const Timeout = 20 * time.Second

// Dial connects to a unix socket; the connection closes when the test ends.
func Dial(t testing.TB, path string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// Eventually polls cond until it holds, failing the test after Timeout.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Register waits for the plugin's registration socket regSock (failing the
// test if the plugin's run returns on done first), registers the plugin as
// the kubelet does, and returns its info and a client of its DRA socket.
func Register(ctx context.Context, t testing.TB, regSock string, done <-chan error) (*registerapi.PluginInfo, drapb.DRAPluginClient) {
	t.Helper()
	Eventually(t, "the registration socket", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Run returned early: %v", err)
		default:
		}
		_, err := os.Stat(regSock)
		return err == nil
	})
	info, err := registerapi.NewRegistrationClient(Dial(t, regSock)).GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registerapi.NewRegistrationClient(Dial(t, regSock)).NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	return info, drapb.NewDRAPluginClient(Dial(t, info.Endpoint))
}

// Returned waits for the plugin's run to return nil on done after its
// context was canceled.
func Returned(t testing.TB, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(Timeout):
		t.Fatal("Run did not return after cancel")
	}
}

// PublishedDevices waits until the ResourceSlices in the API hold want
// devices in all, as the plugin publishes them.
func PublishedDevices(ctx context.Context, t testing.TB, client kubernetes.Interface, want int) {
	t.Helper()
	Eventually(t, fmt.Sprintf("%d published devices", want), func() bool {
		slices, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		n := 0
		for _, s := range slices.Items {
			n += len(s.Spec.Devices)
		}
		return n == want
	})
}

// Unprepare unprepares one claim over the DRA socket, as the kubelet does,
// and fails the test unless that succeeds.
func Unprepare(ctx context.Context, t testing.TB, dra drapb.DRAPluginClient, namespace, name, uid string) {
	t.Helper()
	res, err := dra.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: namespace, Name: name, Uid: uid}}})
	if err != nil || res.Claims[uid].GetError() != "" {
		t.Fatalf("unprepare %s/%s: %v %+v", namespace, name, err, res)
	}
}
