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

package computedomain

import (
	"fmt"

	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/computedomain-operator/computedomain-operator/internal/computedomain/identity"
	"github.com/computedomain-operator/computedomain-operator/internal/hostroot"
)

// CDI device names within a claim's spec.
const (
	cdiChannelDevice = "imex-channels"
	cdiDaemonDevice  = "imex-daemon"
)

// channelEdits exposes IMEX channels as character devices
// /dev/nvidia-caps-imex-channels/channel<N> (major from /proc/devices,
// minor N).
func channelEdits(major uint32, channels []int) cdispec.ContainerEdits {
	var edits cdispec.ContainerEdits
	for _, n := range channels {
		edits.DeviceNodes = append(edits.DeviceNodes, &cdispec.DeviceNode{
			Path:  fmt.Sprintf("%s/channel%d", hostroot.ImexChannelDir, n),
			Type:  "c",
			Major: int64(major),
			Minor: int64(n),
		})
	}
	return edits
}

// daemonEdits gives the daemon container its domain's identity and mounts
// the domain's config directory at identity.ContainerConfigDir.
func daemonEdits(id identity.Identity, hostConfigDir string) cdispec.ContainerEdits {
	id.ConfigDir = identity.ContainerConfigDir
	return cdispec.ContainerEdits{
		Env: id.Env(),
		Mounts: []*cdispec.Mount{{
			HostPath:      hostConfigDir,
			ContainerPath: identity.ContainerConfigDir,
			Type:          "bind",
			Options:       []string{"rbind", "rw"},
		}},
	}
}
