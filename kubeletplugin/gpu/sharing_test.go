package gpu

import (
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

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
