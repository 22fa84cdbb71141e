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
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// BenchmarkAllocatorOneNode is the scheduler's DRA Filter for one node, as kube-scheduler runs it for each
// node it tries: the structured allocator over the node's slices, a claim of one device of the chart's class,
// half the node's devices already allocated. "published" is the slices the plugin publishes; "type-only" the
// same devices with the type attribute alone (the minimal slice set of bench scheduler); the others drop one
// group of attributes to show what each costs.
func BenchmarkAllocatorOneNode(b *testing.B) {
	for _, v := range []struct{ profile, class string }{
		{"gb200-nvl72", "gpu.nvidia.com"},
		{"a100-40gb-mig", "mig.nvidia.com"},
	} {
		d := newTestNodeEnv(b, v.profile).mustDriver()
		published := ResourceSlices(testDriver, testNode, d.Resources())
		variants := []struct {
			name string
			keep func(resourceapi.QualifiedName) bool
			caps bool
		}{
			{"published", func(resourceapi.QualifiedName) bool { return true }, true},
			{"no-versions", func(n resourceapi.QualifiedName) bool {
				return n != attrDriverVersion && n != attrCUDADriverVersion && n != attrCUDACompute
			}, true},
			{"no-capacity", func(resourceapi.QualifiedName) bool { return true }, false},
			{"type-only", func(n resourceapi.QualifiedName) bool { return n == attrType }, false},
		}
		for _, variant := range variants {
			slices := filterDevices(published, variant.keep, variant.caps)
			b.Run(v.profile+"/"+variant.name, func(b *testing.B) {
				benchmarkAllocate(b, slices, v.class)
			})
		}
	}
}

func filterDevices(in []*resourceapi.ResourceSlice, keep func(resourceapi.QualifiedName) bool, caps bool) []*resourceapi.ResourceSlice {
	out := make([]*resourceapi.ResourceSlice, 0, len(in))
	for _, s := range in {
		s = s.DeepCopy()
		for i := range s.Spec.Devices {
			dev := &s.Spec.Devices[i]
			for n := range dev.Attributes {
				if !keep(n) {
					delete(dev.Attributes, n)
				}
			}
			if !caps {
				dev.Capacity = nil
			}
		}
		out = append(out, s)
	}
	return out
}

func benchmarkAllocate(b *testing.B, slices []*resourceapi.ResourceSlice, class string) {
	var names []string
	for _, s := range slices {
		for _, dev := range s.Spec.Devices {
			names = append(names, dev.Name)
		}
	}
	state := structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID]()}
	for _, name := range names[:len(names)/2] {
		state.AllocatedDevices.Insert(structured.MakeDeviceID(testDriver, testNode, name))
	}
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: "default", UID: "claim-uid"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "dev", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
	classes := loadChartDeviceClasses(b)
	features := structured.Features{PartitionableDevices: true, DeviceTaints: true, PrioritizedList: true, AdminAccess: true, ConsumableCapacity: true}
	celCache := cel.NewCache(10, cel.Features{})
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		alloc, err := structured.NewAllocator(ctx, features, state, classes, slices, celCache)
		if err != nil {
			b.Fatal(err)
		}
		results, err := alloc.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
		if err != nil || len(results) != 1 {
			b.Fatalf("allocate: %v, %d results", err, len(results))
		}
	}
	_ = ptr.To(0)
}
