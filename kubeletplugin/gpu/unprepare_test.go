package gpu

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

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
