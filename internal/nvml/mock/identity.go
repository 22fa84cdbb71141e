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

package mock

import (
	"crypto/sha1"
	"fmt"
	"strings"
)

// derivedUUID returns a name-based (version 5 style) UUID from the parts, so
// the same node name and index always give the same identity.
func derivedUUID(parts ...string) [16]byte {
	sum := sha1.Sum([]byte("computedomain-operator/nvml-mock\x00" + strings.Join(parts, "\x00")))
	var u [16]byte
	copy(u[:], sum[:16])
	u[6] = (u[6] & 0x0f) | 0x50
	u[8] = (u[8] & 0x3f) | 0x80
	return u
}

func formatUUID(u [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// GPUUUID is the UUID the mock gives GPU index of node.
func GPUUUID(node string, index int) string {
	return "GPU-" + formatUUID(derivedUUID("gpu", node, fmt.Sprint(index)))
}

// MIGUUID is the UUID of the n-th MIG device created on a GPU (static
// layouts are created first, in layout order).
func MIGUUID(node string, gpuIndex int, n uint64) string {
	return "MIG-" + formatUUID(derivedUUID("mig", node, fmt.Sprint(gpuIndex), fmt.Sprint(n)))
}

// RackClusterUUID is the NVLink domain UUID of a rack of a cluster.
func RackClusterUUID(cluster string, rack int) string {
	return formatUUID(derivedUUID("rack", cluster, fmt.Sprint(rack)))
}
