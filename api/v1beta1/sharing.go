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
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Bounds of MpsConfig.DefaultActiveThreadPercentage.
const (
	MinActiveThreadPercentage = 0
	MaxActiveThreadPercentage = 100
)

// Int returns the value NVML and nvidia-smi use for the interval: Default=0, Short=1, Medium=2, Long=3.
func (t TimeSliceInterval) Int() (int, error) {
	i := slices.Index(TimeSliceIntervals, t)
	if i < 0 {
		return 0, fmt.Errorf("time slice interval %q: supported values: %s", t, quoteAll(TimeSliceIntervals))
	}
	return i, nil
}

// Normalize fills the defaults of the strategy: TimeSlicing gets interval Default, MPS gets an empty
// MpsConfig.
func (s *GpuSharing) Normalize() {
	if s == nil {
		return
	}
	switch s.Strategy {
	case TimeSlicingStrategy:
		if s.TimeSlicingConfig == nil {
			s.TimeSlicingConfig = &TimeSlicingConfig{}
		}
		if s.TimeSlicingConfig.Interval == nil {
			s.TimeSlicingConfig.Interval = ptr.To(DefaultTimeSlice)
		}
	case MpsStrategy:
		if s.MpsConfig == nil {
			s.MpsConfig = &MpsConfig{}
		}
	}
}

// Validate checks the sharing of a full GPU; fldPath is the path of the sharing field.
func (s *GpuSharing) Validate(fldPath *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	allErrs := validateStrategy(s.Strategy, fldPath.Child("strategy"))
	if s.TimeSlicingConfig != nil {
		if s.Strategy != TimeSlicingStrategy {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("timeSlicingConfig"),
				fmt.Sprintf("may only be set when strategy is %q", TimeSlicingStrategy)))
		}
		allErrs = append(allErrs, s.TimeSlicingConfig.Validate(fldPath.Child("timeSlicingConfig"))...)
	}
	if s.MpsConfig != nil {
		if s.Strategy != MpsStrategy {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("mpsConfig"),
				fmt.Sprintf("may only be set when strategy is %q", MpsStrategy)))
		}
		allErrs = append(allErrs, s.MpsConfig.Validate(fldPath.Child("mpsConfig"))...)
	}
	return allErrs
}

// Normalize fills the defaults of the strategy: MPS gets an empty MpsConfig.
func (s *MigDeviceSharing) Normalize() {
	if s == nil {
		return
	}
	if s.Strategy == MpsStrategy && s.MpsConfig == nil {
		s.MpsConfig = &MpsConfig{}
	}
}

// Validate checks the sharing of a MIG device; fldPath is the path of the sharing field.
func (s *MigDeviceSharing) Validate(fldPath *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	allErrs := validateStrategy(s.Strategy, fldPath.Child("strategy"))
	if s.MpsConfig != nil {
		if s.Strategy != MpsStrategy {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("mpsConfig"),
				fmt.Sprintf("may only be set when strategy is %q", MpsStrategy)))
		}
		allErrs = append(allErrs, s.MpsConfig.Validate(fldPath.Child("mpsConfig"))...)
	}
	return allErrs
}

// Validate checks the time slice interval; fldPath is the path of the timeSlicingConfig field.
func (c *TimeSlicingConfig) Validate(fldPath *field.Path) field.ErrorList {
	if c == nil || c.Interval == nil {
		return nil
	}
	if !slices.Contains(TimeSliceIntervals, *c.Interval) {
		return field.ErrorList{field.NotSupported(fldPath.Child("interval"), *c.Interval, TimeSliceIntervals)}
	}
	return nil
}

// Validate checks the MPS limits; fldPath is the path of the mpsConfig field.
func (c *MpsConfig) Validate(fldPath *field.Path) field.ErrorList {
	if c == nil {
		return nil
	}
	var allErrs field.ErrorList
	if p := c.DefaultActiveThreadPercentage; p != nil && (*p < MinActiveThreadPercentage || *p > MaxActiveThreadPercentage) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("defaultActiveThreadPercentage"), *p,
			fmt.Sprintf("must be between %d and %d, inclusive", MinActiveThreadPercentage, MaxActiveThreadPercentage)))
	}
	if q := c.DefaultPinnedDeviceMemoryLimit; q != nil && q.Sign() < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("defaultPinnedDeviceMemoryLimit"), q.String(),
			"must be greater than or equal to 0"))
	}
	perDevice := fldPath.Child("defaultPerDevicePinnedMemoryLimit")
	for _, key := range slices.Sorted(maps.Keys(c.DefaultPerDevicePinnedMemoryLimit)) {
		if _, _, ok := parseDeviceKey(key); !ok {
			allErrs = append(allErrs, field.Invalid(perDevice, key,
				`keys must be a device index (e.g. "0") or a device UUID (e.g. "GPU-…", "MIG-…")`))
		}
		if q := c.DefaultPerDevicePinnedMemoryLimit[key]; q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(perDevice.Key(key), q.String(), "must be greater than or equal to 0"))
		}
	}
	return allErrs
}

func validateStrategy(s SharingStrategy, fldPath *field.Path) field.ErrorList {
	if s == "" {
		return field.ErrorList{field.Required(fldPath, fmt.Sprintf("supported values: %s", quoteAll(SharingStrategies)))}
	}
	if !slices.Contains(SharingStrategies, s) {
		return field.ErrorList{field.NotSupported(fldPath, s, SharingStrategies)}
	}
	return nil
}

func quoteAll[T ~string](values []T) string {
	out := ""
	for i, v := range values {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%q", v)
	}
	return out
}
