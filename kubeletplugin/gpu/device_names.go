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
	"fmt"
	"strings"
)

// gpuDeviceName is "gpu-<minor>".
func gpuDeviceName(minor int) string { return fmt.Sprintf("gpu-%d", minor) }

// migDeviceName is "gpu-<parentMinor>-mig-<profile without dots>-<giProfileID>-<placementStart>",
// e.g. gpu-0-mig-1g5gb-19-0. A "+" (media extension profiles such as
// 1g.10gb+me) becomes "-" to stay a DNS label.
func migDeviceName(parentMinor int, profile string, giProfileID, placementStart int) string {
	p := profileNameReplacer.Replace(strings.ToLower(profile))
	return fmt.Sprintf("gpu-%d-mig-%s-%d-%d", parentMinor, p, giProfileID, placementStart)
}

var profileNameReplacer = strings.NewReplacer(".", "", "+", "-")

// counterSetName names the shared counters of one GPU in partitionable mode.
func counterSetName(minor int) string { return fmt.Sprintf("gpu-%d-counters", minor) }

// memorySliceCounter names the counter of one memory slice.
func memorySliceCounter(i int) string { return fmt.Sprintf("memory-slice-%d", i) }
