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

package controllertest

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/finalizer"
	utiltesting "github.com/computedomain-operator/computedomain-operator/internal/testing"
	"github.com/computedomain-operator/computedomain-operator/internal/testing/envtest"
)

// TestStartedControllerReconcilesADomain starts a control plane and the controller on it; a new
// ComputeDomain gets the controller's finalizer, and stop ends the manager cleanly.
func TestStartedControllerReconcilesADomain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd")
	}
	env, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	_, ctx := ktesting.NewTestContext(t)
	const ns = "nvidia-dra"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	stop, err := Start(ctx, env, ns, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	cd := utiltesting.MakeComputeDomain("train", "default").Obj()
	if err := env.Client.Create(ctx, cd); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(cd), cd); err == nil && controllerutil.ContainsFinalizer(cd, finalizer.Name) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("domain has finalizers %v, want %s", cd.Finalizers, finalizer.Name)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Errorf("manager returned %v", err)
	}
}
