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

import "errors"

// Error reasons, the values of the errors-by-reason metrics.
const (
	reasonInvalid    = "invalid"    // allocation names a device or pool this node does not have
	reasonConflict   = "conflict"   // device already prepared for another claim
	reasonConfig     = "config"     // opaque config does not decode, validate or fit the device
	reasonNVML       = "nvml"       // an NVML call failed
	reasonSharing    = "sharing"    // applying a sharing setting failed
	reasonMPS        = "mps"        // starting or stopping the MPS control daemon failed
	reasonCDI        = "cdi"        // writing or deleting the CDI spec failed
	reasonCheckpoint = "checkpoint" // saving the checkpoint failed
	reasonRollback   = "rollback"   // undoing an interrupted prepare failed
	reasonVfio       = "vfio"       // moving a GPU between the nvidia and vfio-pci drivers failed
	reasonFabric     = "fabric"     // a Fabric Manager partition could not be found or (de)activated
)

// prepareError carries the metrics reason of a failed prepare or unprepare.
type prepareError struct {
	reason string
	err    error
}

func (e *prepareError) Error() string { return e.err.Error() }
func (e *prepareError) Unwrap() error { return e.err }

func reasonOf(err error) string {
	var pe *prepareError
	if errors.As(err, &pe) {
		return pe.reason
	}
	return "other"
}
