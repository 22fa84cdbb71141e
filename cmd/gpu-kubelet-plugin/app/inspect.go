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

package app

import (
	"context"
	"fmt"
	"io"

	resourceapi "k8s.io/api/resource/v1"
	"sigs.k8s.io/yaml"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
	"github.com/computedomain-operator/computedomain-operator/kubeletplugin/gpu"
)

// InspectReport is what "inspect" prints: the node's clique and the
// ResourceSlices the plugin would publish.
type InspectReport struct {
	NodeName          string `json:"nodeName"`
	DriverName        string `json:"driverName"`
	CliqueID          string `json:"cliqueID"`
	CliqueLabel       string `json:"cliqueLabel"`
	DriverVersion     string `json:"driverVersion"`
	CUDADriverVersion string `json:"cudaDriverVersion"`
	PartitionableMIG  bool   `json:"partitionableMIG"`
	// LostGPUs are NVML indexes of GPUs that fell off the bus: not published.
	LostGPUs       []int                        `json:"lostGPUs,omitempty"`
	ResourceSlices []*resourceapi.ResourceSlice `json:"resourceSlices"`
	// Comparison is set with --compare-profile.
	Comparison *ProfileComparison `json:"comparison,omitempty"`
}

// inspect reads the node through NVML and prints the report as YAML. It
// changes nothing: no checkpoint, CDI spec, MIG instance or API object.
func inspect(ctx context.Context, o *options, lib nvml.Interface, out io.Writer) error {
	inv, err := gpu.DiscoverInventory(ctx, lib, o.HostRoot)
	if err != nil {
		return err
	}
	res := gpu.BuildResources(inv, gpu.PublishOptions{PoolName: o.NodeName, PartitionableMIG: o.partitionableMIG, Shares: o.shares})
	report := InspectReport{
		NodeName: o.NodeName, DriverName: o.DriverName, CliqueID: inv.CliqueID, CliqueLabel: gpu.CliqueLabel,
		DriverVersion: inv.DriverVersion, CUDADriverVersion: inv.CUDADriverVersion, PartitionableMIG: o.partitionableMIG,
		LostGPUs:       inv.LostGPUs,
		ResourceSlices: gpu.ResourceSlices(o.DriverName, o.NodeName, res),
	}
	if o.compareProfile != "" {
		if report.Comparison, err = compareWithProfile(ctx, o, o.compareProfile, report.ResourceSlices); err != nil {
			return err
		}
	}
	data, err := yaml.Marshal(report)
	if err != nil {
		return fmt.Errorf("render inspect report: %w", err)
	}
	_, err = out.Write(data)
	return err
}
