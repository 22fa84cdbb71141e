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

package hostroot

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MIGMinors reads /proc/driver/nvidia-caps/mig-minors: capability name
// ("config", "gpu0/gi1/access", "gpu0/gi1/ci0/access") to device minor.
func (r Root) MIGMinors() (map[string]uint32, error) {
	data, err := os.ReadFile(r.Path(MIGMinorsFile))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", MIGMinorsFile, err)
	}
	out := map[string]uint32{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		v, err := strconv.ParseUint(fields[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", MIGMinorsFile, sc.Text(), err)
		}
		out[fields[0]] = uint32(v)
	}
	return out, nil
}
