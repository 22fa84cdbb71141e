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

package topologyview

import (
	"fmt"
	"hash/fnv"
	"math"
)

// holderColor is the holder's fill in the SVG picture: a hue from a hash of its kind, namespace and name alone,
// so a domain keeps its color from one picture to the next whatever else runs. Domains get saturated colors,
// other workloads pale ones, so domains stand out.
func holderColor(id holderID) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id.kind + "/" + id.namespace + "/" + id.name)) // a hash's Write never fails
	sum := h.Sum32()
	hue := float64(sum % 360)
	if id.kind == HolderComputeDomain {
		return hslHex(hue, 0.65, 0.55)
	}
	return hslHex(hue, 0.25, 0.80)
}

// hslHex converts hue (degrees), saturation and lightness (0-1) to #rrggbb.
func hslHex(h, s, l float64) string {
	c := (1 - math.Abs(2*l-1)) * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	m := l - c/2
	var r, g, b float64
	switch {
	case h < 60:
		r, g, b = c, x, 0
	case h < 120:
		r, g, b = x, c, 0
	case h < 180:
		r, g, b = 0, c, x
	case h < 240:
		r, g, b = 0, x, c
	case h < 300:
		r, g, b = x, 0, c
	default:
		r, g, b = c, 0, x
	}
	to8 := func(v float64) int { return int(math.Round((v + m) * 255)) }
	return fmt.Sprintf("#%02x%02x%02x", to8(r), to8(g), to8(b))
}
