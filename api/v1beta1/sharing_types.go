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

package v1beta1

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// SharingStrategy says how the workloads holding one device share it.
// +kubebuilder:validation:Enum=TimeSlicing;MPS
type SharingStrategy string

const (
	// TimeSlicingStrategy shares a device between processes by time slices.
	TimeSlicingStrategy SharingStrategy = "TimeSlicing"
	// MpsStrategy shares a device through an MPS control daemon.
	MpsStrategy SharingStrategy = "MPS"
)

// SharingStrategies lists the valid sharing strategies, in the order error messages show them.
var SharingStrategies = []SharingStrategy{TimeSlicingStrategy, MpsStrategy}

// TimeSliceInterval is the length of a GPU time slice.
// +kubebuilder:validation:Enum=Default;Short;Medium;Long
type TimeSliceInterval string

const (
	// DefaultTimeSlice keeps the driver's default time slice.
	DefaultTimeSlice TimeSliceInterval = "Default"
	// ShortTimeSlice is the shortest time slice.
	ShortTimeSlice TimeSliceInterval = "Short"
	// MediumTimeSlice is a medium time slice.
	MediumTimeSlice TimeSliceInterval = "Medium"
	// LongTimeSlice is the longest time slice.
	LongTimeSlice TimeSliceInterval = "Long"
)

// TimeSliceIntervals lists the valid intervals, in the order error messages show them.
var TimeSliceIntervals = []TimeSliceInterval{DefaultTimeSlice, ShortTimeSlice, MediumTimeSlice, LongTimeSlice}

// GpuSharing configures how the workloads holding one full GPU share it.
type GpuSharing struct {
	// strategy is TimeSlicing or MPS.
	// +required
	Strategy SharingStrategy `json:"strategy"`

	// timeSlicingConfig tunes the TimeSlicing strategy; only allowed with it.
	// +optional
	TimeSlicingConfig *TimeSlicingConfig `json:"timeSlicingConfig,omitempty"`

	// mpsConfig tunes the MPS strategy; only allowed with it.
	// +optional
	MpsConfig *MpsConfig `json:"mpsConfig,omitempty"`
}

// MigDeviceSharing configures how the workloads holding one MIG device share it. MIG devices have no
// time-slice setting of their own.
type MigDeviceSharing struct {
	// strategy is TimeSlicing or MPS.
	// +required
	Strategy SharingStrategy `json:"strategy"`

	// mpsConfig tunes the MPS strategy; only allowed with it.
	// +optional
	MpsConfig *MpsConfig `json:"mpsConfig,omitempty"`
}

// TimeSlicingConfig tunes GPU time slicing.
type TimeSlicingConfig struct {
	// interval is the time slice length: Default, Short, Medium or Long.
	// +optional
	Interval *TimeSliceInterval `json:"interval,omitempty"`
}

// MpsConfig tunes the MPS control daemon that serves a shared device.
type MpsConfig struct {
	// defaultActiveThreadPercentage limits the share of the device's threads each client may use, 0..100.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	DefaultActiveThreadPercentage *int `json:"defaultActiveThreadPercentage,omitempty"`

	// defaultPinnedDeviceMemoryLimit limits the device memory each client may pin, on every device.
	// +optional
	DefaultPinnedDeviceMemoryLimit *resource.Quantity `json:"defaultPinnedDeviceMemoryLimit,omitempty"`

	// defaultPerDevicePinnedMemoryLimit overrides defaultPinnedDeviceMemoryLimit per device, keyed by the
	// device's index within the claim's devices (e.g. "0") or its UUID ("GPU-…", "MIG-…").
	// +optional
	DefaultPerDevicePinnedMemoryLimit MpsPerDevicePinnedMemoryLimit `json:"defaultPerDevicePinnedMemoryLimit,omitempty"`

	// multiUser starts the MPS control daemon in multi-user mode, so that clients running as different
	// UIDs can share it. Unset means off.
	// +optional
	MultiUser *bool `json:"multiUser,omitempty"`
}

// MpsPerDevicePinnedMemoryLimit maps a device index or UUID to a pinned device memory limit.
type MpsPerDevicePinnedMemoryLimit map[string]resource.Quantity
