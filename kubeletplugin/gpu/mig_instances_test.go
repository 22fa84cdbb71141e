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

package gpu

import (
	"testing"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

func TestMigInstanceLifecycle(t *testing.T) {
	e := newTestNodeEnv(t, "a100-40gb-mig", withDynamicMIG())
	d := e.mustDriver()
	g := d.Inventory().GPUs[3]
	parent, r := e.lib.DeviceGetHandleByUUID(g.UUID)
	if r != nvml.SUCCESS {
		t.Fatal(r)
	}
	var small, big MigProfile
	for _, p := range g.MigProfiles {
		switch p.Name {
		case "1g.5gb":
			small = p
		case "7g.40gb":
			big = p
		}
	}
	inst, err := createMigInstance(e.lib, parent, small, small.Placements[2])
	if err != nil {
		t.Fatal(err)
	}
	if inst.UUID == "" || migInstances(t, e.lib, g.UUID) != 1 {
		t.Fatalf("instance %+v, %d MIG devices", inst, migInstances(t, e.lib, g.UUID))
	}
	if _, err := createMigInstance(e.lib, parent, small, small.Placements[2]); err == nil {
		t.Error("a second instance on the same placement was created")
	}
	if _, err := createMigInstance(e.lib, parent, big, big.Placements[0]); err == nil {
		t.Error("the full-GPU profile was created over an existing instance")
	}
	if n := migInstances(t, e.lib, g.UUID); n != 1 {
		t.Errorf("failed creations left %d MIG devices, want 1", n)
	}
	if err := destroyMigInstance(e.lib, parent, inst); err != nil {
		t.Fatal(err)
	}
	if err := destroyMigInstance(e.lib, parent, inst); err != nil {
		t.Errorf("destroying an instance that is gone: %v", err)
	}
	if n := migInstances(t, e.lib, g.UUID); n != 0 {
		t.Errorf("%d MIG devices after destroy", n)
	}
}

func TestDestroyUnknownMigInstancesKeepsRecordedOnes(t *testing.T) {
	e := newTestNodeEnv(t, "a100-40gb-mig", withDynamicMIG())
	d := e.mustDriver()
	g := d.Inventory().GPUs[0]
	parent, _ := e.lib.DeviceGetHandleByUUID(g.UUID)
	var small MigProfile
	for _, p := range g.MigProfiles {
		if p.Name == "1g.5gb" {
			small = p
		}
	}
	kept, err := createMigInstance(e.lib, parent, small, small.Placements[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := createMigInstance(e.lib, parent, small, small.Placements[1]); err != nil {
		t.Fatal(err)
	}
	n, err := destroyUnknownMigInstances(e.lib, parent, g.MigProfiles, map[int]bool{kept.GIID: true})
	if err != nil || n != 1 {
		t.Errorf("destroyed %d (%v), want 1", n, err)
	}
	if got := migInstances(t, e.lib, g.UUID); got != 1 {
		t.Errorf("%d MIG devices left, want the recorded one", got)
	}
}
