package gpu

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

// nvidiaMajor is the fixed character-device major of /dev/nvidia*.
const nvidiaMajor = 195

// controlMinor is /dev/nvidiactl's minor.
const controlMinor = 255

// hostDevices are the character-device numbers the CDI specs need, read from
// the host's /proc through the host root (a temp directory in tests).
type hostDevices struct {
	// uvmMajor is 0 when nvidia-uvm is not loaded.
	uvmMajor int
	// capsMajor is 0 when nvidia-caps is not registered (no MIG support).
	capsMajor int
	// migMinors maps "gpu0/gi1/access" and "gpu0/gi1/ci0/access" to the
	// minor of /dev/nvidia-caps/nvidia-cap<N>.
	migMinors map[string]int
}

func absent(err error) bool {
	return errors.Is(err, hostroot.ErrNotFound) || errors.Is(err, fs.ErrNotExist)
}

func readHostDevices(root hostroot.Root) (hostDevices, error) {
	hd := hostDevices{migMinors: map[string]int{}}
	for name, dst := range map[string]*int{"nvidia-uvm": &hd.uvmMajor, "nvidia-caps": &hd.capsMajor} {
		major, err := root.CharDeviceMajor(name)
		switch {
		case err == nil:
			*dst = int(major)
		case absent(err):
		default:
			return hd, fmt.Errorf("host devices: %w", err)
		}
	}
	minors, err := root.MIGMinors()
	switch {
	case err == nil:
		for k, v := range minors {
			hd.migMinors[k] = int(v)
		}
	case absent(err):
	default:
		return hd, fmt.Errorf("host devices: %w", err)
	}
	return hd, nil
}

func giCapKey(gpuMinor, gi int) string { return fmt.Sprintf("gpu%d/gi%d/access", gpuMinor, gi) }

func ciCapKey(gpuMinor, gi, ci int) string {
	return fmt.Sprintf("gpu%d/gi%d/ci%d/access", gpuMinor, gi, ci)
}
