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

package computedomain

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	"k8s.io/utils/ptr"

	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin/kubelettest"
)

// measureChannelClaimsOverSocket serves the compute-domain plugin of a
// GB200 tray whose domain is Ready on it through the kubeletplugin helper on
// a unix socket (under TMPDIR, with the checkpoint and the CDI specs),
// registers it as the kubelet does, and runs rounds prepare+unprepare calls
// of a new workload channel claim each over the DRA socket; the helper reads
// each claim from the API (a fake clientset). It returns every call's
// latency.
func measureChannelClaimsOverSocket(tb testing.TB, rounds int, beforeLoop func()) (prepare, unprepare kubelettest.Latencies) {
	tb.Helper()
	e := newNodeEnv(tb, "gb200-nvl72")
	e.domains.set(domain("a", "team-a", uidA, e.clique, ptr.To[int32](4), testNode))
	d := e.driver()
	_, ctx := ktesting.NewTestContext(tb)
	if _, ok := tb.(*testing.B); ok {
		ctx = klog.NewContext(context.Background(), logr.Discard())
	}
	ctx, cancel := context.WithCancel(ctx)
	tb.Cleanup(cancel)
	// A first claim of the domain stays prepared, so that the rounds measure
	// the steady state of a node that already serves the domain.
	keep := channelClaim("keep", "team-a", "keep", 31, uidA, "")
	if res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{keep}); err != nil || res[keep.UID].Err != nil {
		tb.Fatal(err, res[keep.UID].Err)
	}
	// Short: unix socket paths are limited to 108 bytes.
	base, err := os.MkdirTemp("", "cs")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(base) })
	client := fake.NewClientset()
	helper, err := draplugin.Start(ctx, d, draplugin.Options{
		DriverName: DefaultDriverName, NodeName: testNode, KubeClient: client,
		RegistrarDir: filepath.Join(base, "reg"), PluginsDir: filepath.Join(base, "plg"),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(helper.Stop)
	_, dra := kubelettest.Register(ctx, tb, filepath.Join(base, "reg", DefaultDriverName+"-reg.sock"), nil)

	check := func(r *drapb.NodePrepareResourceResponse) error {
		if len(r.Devices) != 1 || len(r.Devices[0].CdiDeviceIds) == 0 {
			return fmt.Errorf("devices %+v, want one channel with its CDI device", r.Devices)
		}
		return nil
	}
	return kubelettest.MeasureRounds(ctx, tb, client, dra, rounds, func(i int) *resourceapi.ResourceClaim {
		uid := fmt.Sprintf("claim-%d", i)
		return channelClaim("w-"+uid, "team-a", types.UID(uid), 0, uidA, "")
	}, check, beforeLoop)
}

// BenchmarkPrepareChannelClaimOverSocket measures NodePrepareResources and
// NodeUnprepareResources of a workload channel claim of the
// compute-domain.nvidia.com plugin, its domain Ready on the node, as the
// kubelet calls them: gRPC over the plugin's unix socket, the kubeletplugin
// helper reading the claim from the API (a fake clientset), the driver's
// domain check, CDI spec and checkpoint writes (fsync, under TMPDIR). It
// reports the p50 and p99 of each call (docs/benchmarks.md):
//
//	go test -p 1 -run '^$' -bench BenchmarkPrepareChannelClaimOverSocket -benchtime 2000x ./kubeletplugin/computedomain/
//	TMPDIR=/dev/shm go test -p 1 -run '^$' -bench BenchmarkPrepareChannelClaimOverSocket -benchtime 2000x ./kubeletplugin/computedomain/
func BenchmarkPrepareChannelClaimOverSocket(b *testing.B) {
	prepare, unprepare := measureChannelClaimsOverSocket(b, b.N, b.ResetTimer)
	b.StopTimer()
	prepare.Report(b, "prepare")
	unprepare.Report(b, "unprepare")
}

// TestPrepareChannelClaimOverSocketBenchmarkRuns is the benchmark's reduced
// run in the test suite: 20 channel claims prepare and unprepare over the
// socket and the figures are sane (not a timing goal: this machine is shared).
func TestPrepareChannelClaimOverSocketBenchmarkRuns(t *testing.T) {
	const rounds = 20
	prepare, unprepare := measureChannelClaimsOverSocket(t, rounds, nil)
	prepare.CheckSane(t, "prepare", rounds, 10*time.Second)
	unprepare.CheckSane(t, "unprepare", rounds, 10*time.Second)
}
