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

package nvml

import (
	"fmt"
	"strings"
)

// ArchitectureName returns the architecture as nvidia-smi and the NVIDIA DRA
// driver spell it ("Ampere", "Hopper", "Blackwell"), "" when unknown.
func ArchitectureName(a DeviceArchitecture) string {
	switch a {
	case 2:
		return "Kepler"
	case 3:
		return "Maxwell"
	case 4:
		return "Pascal"
	case 5:
		return "Volta"
	case 6:
		return "Turing"
	case DEVICE_ARCH_AMPERE:
		return "Ampere"
	case DEVICE_ARCH_ADA:
		return "Ada Lovelace"
	case DEVICE_ARCH_HOPPER:
		return "Hopper"
	case DEVICE_ARCH_BLACKWELL:
		return "Blackwell"
	case 13:
		return "Rubin"
	}
	return ""
}

// BrandName returns the product brand as nvidia-smi prints it.
func BrandName(b BrandType) string {
	switch b {
	case 1:
		return "Quadro"
	case BRAND_TESLA:
		return "Tesla"
	case 3:
		return "NVS"
	case 5:
		return "GeForce"
	case 6:
		return "Titan"
	case BRAND_NVIDIA:
		return "NVIDIA"
	}
	return "Unknown"
}

// AddressingModeName returns "HMM" or "ATS", or "" when the GPU uses
// neither or the driver does not say.
func AddressingModeName(m DeviceAddressingMode) string {
	switch DeviceAddressingModeType(m.Value) {
	case DEVICE_ADDRESSING_MODE_HMM:
		return "HMM"
	case DEVICE_ADDRESSING_MODE_ATS:
		return "ATS"
	}
	return ""
}

// CUDAVersionString turns SystemGetCudaDriverVersion's 13000 into "13.0".
func CUDAVersionString(v int) string {
	return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10)
}

// NormalizePCIBusID turns NVML's "00000000:1B:00.0" into the sysfs form
// "0000:1b:00.0" used by resource.kubernetes.io/pciBusID.
func NormalizePCIBusID(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	parts := strings.SplitN(id, ":", 3)
	if len(parts) == 3 && len(parts[0]) > 4 {
		parts[0] = parts[0][len(parts[0])-4:]
	}
	return strings.Join(parts, ":")
}

// FormatClusterUUID renders the 16 bytes of a fabric cluster UUID in the
// canonical 8-4-4-4-12 form.
func FormatClusterUUID(b [16]uint8) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ParseClusterUUID is the inverse of FormatClusterUUID.
func ParseClusterUUID(s string) ([16]uint8, error) {
	var out [16]uint8
	hex := strings.ReplaceAll(s, "-", "")
	if len(hex) != 32 || len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return out, fmt.Errorf("cluster UUID %q: want the 8-4-4-4-12 hex form", s)
	}
	for i := range out {
		var b uint8
		if _, err := fmt.Sscanf(hex[2*i:2*i+2], "%02x", &b); err != nil {
			return out, fmt.Errorf("cluster UUID %q: %w", s, err)
		}
		out[i] = b
	}
	return out, nil
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// PCIBusIDString reads the bus ID out of a PciInfo.
func PCIBusIDString(p PciInfo) string {
	return cString(p.BusId[:])
}
