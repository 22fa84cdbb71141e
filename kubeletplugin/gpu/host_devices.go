package gpu

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// nvidiaMajor is the fixed character-device major of /dev/nvidia*.
const nvidiaMajor = 195

// controlMinor is /dev/nvidiactl's minor.
const controlMinor = 255

// hostDevices are the character-device numbers the CDI specs need, read from
// the host's /proc (through the host root, so tests use a temp directory).
type hostDevices struct {
	// uvmMajor is 0 when nvidia-uvm is not loaded.
	uvmMajor int
	// capsMajor is 0 when nvidia-caps is not registered (no MIG support).
	capsMajor int
	// migMinors maps "gpu0/gi1/access" and "gpu0/gi1/ci0/access" to the
	// minor of /dev/nvidia-caps/nvidia-cap<N>.
	migMinors map[string]int
}

func readHostDevices(hostRoot string) (hostDevices, error) {
	hd := hostDevices{migMinors: map[string]int{}}
	majors, err := readLines(filepath.Join(hostRoot, "proc/devices"))
	if err != nil {
		return hd, err
	}
	for _, line := range majors {
		fields := strings.Fields(line)
		if len(fields) != 2 {
			continue
		}
		n, err := strconv.Atoi(fields[0])
		if err != nil {
			continue
		}
		switch fields[1] {
		case "nvidia-uvm":
			hd.uvmMajor = n
		case "nvidia-caps":
			hd.capsMajor = n
		}
	}
	minors, err := readLines(filepath.Join(hostRoot, "proc/driver/nvidia-caps/mig-minors"))
	if err != nil {
		return hd, err
	}
	for _, line := range minors {
		fields := strings.Fields(line)
		if len(fields) != 2 {
			continue
		}
		if n, err := strconv.Atoi(fields[1]); err == nil {
			hd.migMinors[fields[0]] = n
		}
	}
	return hd, nil
}

// readLines returns no lines for a missing file: a node without UVM or MIG
// simply lacks those entries.
func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		lines = append(lines, s.Text())
	}
	return lines, s.Err()
}

func giCapKey(gpuMinor, gi int) string { return fmt.Sprintf("gpu%d/gi%d/access", gpuMinor, gi) }

func ciCapKey(gpuMinor, gi, ci int) string {
	return fmt.Sprintf("gpu%d/gi%d/ci%d/access", gpuMinor, gi, ci)
}
