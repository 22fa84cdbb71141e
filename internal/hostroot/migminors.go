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
