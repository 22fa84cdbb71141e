package gpu

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

type recordingPublisher struct {
	mu   sync.Mutex
	last resourceslice.DriverResources
	n    int
	ch   chan struct{}
}

func (p *recordingPublisher) publish(_ context.Context, r resourceslice.DriverResources) error {
	p.mu.Lock()
	p.last, p.n = r, p.n+1
	p.mu.Unlock()
	select {
	case p.ch <- struct{}{}:
	default:
	}
	return nil
}

func TestRunRepublishesOnHealthChange(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	pub := &recordingPublisher{ch: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	if err := d.SetPublisher(ctx, pub.publish); err != nil {
		t.Fatal(err)
	}
	<-pub.ch
	go d.Run(ctx)
	select {
	case <-d.health.eventsRegistered:
	case <-time.After(10 * time.Second):
		t.Fatal("event watch did not start")
	}
	if _, err := e.lib.InjectXid(5, 48); err != nil {
		t.Fatal(err)
	}
	select {
	case <-pub.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no republish after a health change")
	}
	pub.mu.Lock()
	defer pub.mu.Unlock()
	var tainted []string
	for _, dev := range allDevices(pub.last) {
		if len(dev.Taints) > 0 {
			tainted = append(tainted, dev.Name)
		}
	}
	if strings.Join(tainted, ",") != "gpu-5" {
		t.Errorf("tainted devices %v, want [gpu-5]", tainted)
	}
}

type fakeClaims map[string]types.UID // "ns/name" → UID

func (f fakeClaims) GetResourceClaim(_ context.Context, ns, name string) (*resourceapi.ResourceClaim, error) {
	uid, ok := f[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(resourceapi.Resource("resourceclaims"), name)
	}
	return &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid}}, nil
}

func TestCleanupStaleClaims(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	claims := fakeClaims{"default/alive": "uid-alive", "default/recreated": "uid-new"}
	d := e.mustDriver(withClaims(claims))
	for _, c := range []*resourceapi.ResourceClaim{
		makeClaim("alive", "uid-alive").device("gpu", "gpu-0").obj(),
		makeClaim("deleted", "uid-deleted").device("gpu", "gpu-1").obj(),
		makeClaim("recreated", "uid-old").device("gpu", "gpu-2").obj(),
	} {
		if _, err := prepareOne(t, d, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.CleanupStaleClaims(testContext(t)); err != nil {
		t.Fatal(err)
	}
	var left []string
	for uid := range loadState(t, e).Claims {
		left = append(left, uid)
	}
	if strings.Join(left, ",") != "uid-alive" {
		t.Errorf("claims left %v, want [uid-alive]", left)
	}
	if got := specFiles(t, e); strings.Join(got, ",") != "uid-alive" {
		t.Errorf("CDI specs left %v", got)
	}
}

func TestSharingThroughNVMLAndCDI(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	ts := makeClaim("ts", "uid-ts").device("gpu", "gpu-1").config(resourceapi.AllocationConfigSourceClaim, tsLong).obj()
	if _, err := prepareOne(t, d, ts); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.lib.TimeSlice(1); got.String() != "Long" {
		t.Errorf("time slice after prepare = %v, want Long", got)
	}
	mps := makeClaim("mps", "uid-mps").device("gpu", "gpu-2").config(resourceapi.AllocationConfigSourceClass,
		`{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"2Gi"}}}`).obj()
	ids, err := prepareOne(t, d, mps)
	if err != nil {
		t.Fatal(err)
	}
	dev2, _ := e.lib.DeviceGetHandleByIndex(2)
	if mode, _ := dev2.GetComputeMode(); mode != 3 { // COMPUTEMODE_EXCLUSIVE_PROCESS
		t.Errorf("compute mode after MPS prepare = %v, want exclusive process", mode)
	}
	view := resolveView(t, e, ids)
	wantEnv := []string{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=" + gpuUUIDOf(t, d, 2) + "=2048M"}
	for _, w := range wantEnv {
		if !strings.Contains(strings.Join(view, "\n"), w) {
			t.Errorf("env %v lacks %s", view, w)
		}
	}
	unprepare(t, d, "uid-ts", "uid-mps")
	if got, _ := e.lib.TimeSlice(1); got.String() != "Default" {
		t.Errorf("time slice after unprepare = %v, want Default", got)
	}
	if mode, _ := dev2.GetComputeMode(); mode != 0 {
		t.Errorf("compute mode after unprepare = %v, want default", mode)
	}
}

func resolveView(t *testing.T, e *testNodeEnv, ids []string) []string {
	t.Helper()
	v, err := resolveCDI(e.cdiRoot, ids)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMetrics(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	reg := prometheus.NewRegistry()
	d := e.mustDriver(func(_ *Config, deps *Deps) { deps.Metrics = NewMetrics(reg) })
	if _, err := prepareOne(t, d, makeClaim("a", "uid-a").device("gpu", "gpu-0").obj()); err != nil {
		t.Fatal(err)
	}
	if _, err := prepareOne(t, d, makeClaim("b", "uid-b").device("gpu", "gpu-0").obj()); err == nil {
		t.Fatal("conflict not detected")
	}
	unprepare(t, d, "uid-a")
	if got := metricValue(t, reg, "gpu_kubelet_plugin_prepare_errors_total", "reason", "conflict"); got != 1 {
		t.Errorf("conflict errors = %v, want 1", got)
	}
	if got := metricValue(t, reg, "gpu_kubelet_plugin_prepare_duration_seconds", "", ""); got != 2 {
		t.Errorf("prepare observations = %v, want 2", got)
	}
	if got := metricValue(t, reg, "gpu_kubelet_plugin_unprepare_duration_seconds", "", ""); got != 1 {
		t.Errorf("unprepare observations = %v, want 1", got)
	}
	if got := metricValue(t, reg, "gpu_kubelet_plugin_devices", "state", stateFree); got != 8 {
		t.Errorf("free devices = %v, want 8", got)
	}
	if _, err := prepareOne(t, d, makeClaim("c", "uid-c").device("gpu", "gpu-4").obj()); err != nil {
		t.Fatal(err)
	}
	if got := metricValue(t, reg, "gpu_kubelet_plugin_devices", "state", statePrepared); got != 1 {
		t.Errorf("prepared devices = %v, want 1", got)
	}
}

// metricValue returns a counter or gauge value, or a histogram's sample
// count, of the series with the given label (empty label: the only series).
func metricValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label != "" && !hasLabel(m, label, value) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("metric %s{%s=%q} not found", name, label, value)
	return 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

func TestHandleErrorStopsOnlyOnFatalErrors(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	var fatal []error
	d := e.mustDriver(func(_ *Config, deps *Deps) { deps.Fatal = func(err error) { fatal = append(fatal, err) } })
	ctx := testContext(t)
	d.HandleError(ctx, fmt.Errorf("publish: conflict: %w", kubeletplugin.ErrRecoverable), "publishing ResourceSlices")
	if len(fatal) != 0 {
		t.Errorf("a recoverable error was fatal: %v", fatal)
	}
	d.HandleError(ctx, errors.New("fields dropped by the API server"), "publishing ResourceSlices")
	if len(fatal) != 1 || !strings.Contains(fatal[0].Error(), "publishing ResourceSlices: fields dropped") {
		t.Errorf("fatal errors %v, want the dropped-fields error", fatal)
	}
}

func TestUnprepareSucceedsOnALostGPU(t *testing.T) {
	e := newTestNodeEnv(t, "hgx-h100-8")
	d := e.mustDriver()
	claim := makeClaim("ts", "uid-ts").device("gpu", "gpu-4").config(resourceapi.AllocationConfigSourceClaim, tsShort).obj()
	if _, err := prepareOne(t, d, claim); err != nil {
		t.Fatal(err)
	}
	if err := e.lib.SetGPULost(4, true); err != nil {
		t.Fatal(err)
	}
	if res := unprepare(t, d, "uid-ts"); res["uid-ts"] != nil {
		t.Errorf("unprepare on a lost GPU: %v", res["uid-ts"])
	}
	if n := len(loadState(t, e).Claims); n != 0 {
		t.Errorf("%d claims still recorded", n)
	}
}
