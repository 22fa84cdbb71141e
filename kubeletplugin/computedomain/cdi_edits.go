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
