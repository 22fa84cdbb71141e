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

package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/computedomain-operator/computedomain-operator/internal/imex"
)

// File names inside the daemon's config directory.
const (
	ConfigFileName = "config.cfg"
	NodesFileName  = "nodes_config.cfg"
)

// IMEXSettings is what the rendered nvidia-imex config depends on.
type IMEXSettings struct {
	// ConfigDir holds config.cfg and nodes_config.cfg.
	ConfigDir string
	// IPAddress is the address the daemon listens on and dials its peers from.
	IPAddress string
	// DomainID, DomainName, DomainNamespace and CliqueID only annotate the file.
	DomainID, DomainName, DomainNamespace, CliqueID string
}

// ConfigPath is the nvidia-imex config file (-c).
func (s IMEXSettings) ConfigPath() string { return filepath.Join(s.ConfigDir, ConfigFileName) }

// NodesPath is the nodes file the config points to.
func (s IMEXSettings) NodesPath() string { return filepath.Join(s.ConfigDir, NodesFileName) }

// Validate names every field that makes no usable config.
func (s IMEXSettings) Validate() error {
	var errs []error
	if s.ConfigDir == "" {
		errs = append(errs, errors.New("config directory must not be empty"))
	} else if !filepath.IsAbs(s.ConfigDir) {
		errs = append(errs, fmt.Errorf("config directory %q must be an absolute path", s.ConfigDir))
	}
	if net.ParseIP(s.IPAddress) == nil {
		errs = append(errs, fmt.Errorf("IP address %q must be an IPv4 or IPv6 address", s.IPAddress))
	}
	for _, f := range [][2]string{{"domain ID", s.DomainID}, {"domain name", s.DomainName}, {"domain namespace", s.DomainNamespace}, {"clique ID", s.CliqueID}} {
		if strings.ContainsAny(f[1], "\n\r") {
			errs = append(errs, fmt.Errorf("%s %q must be a single line", f[0], f[1]))
		}
	}
	return errors.Join(errs...)
}

// RenderConfig returns the nvidia-imex config file: the keys and defaults
// nvidia-imex documents, bound to the node's address, with the nodes file in
// the same directory (package imex reads the addresses, ports and nodes file
// back). Authentication is off: the ensemble is the domain's
// private set of nodes inside one cluster network.
func RenderConfig(s IMEXSettings) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("render IMEX config: %w", err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# nvidia-imex config rendered by compute-domain-daemon; do not edit.\n")
	if s.DomainID == "" {
		fmt.Fprintf(&b, "# The long-lived IMEX daemon of clique %q (long-lived daemon).\n", s.CliqueID)
	} else {
		fmt.Fprintf(&b, "# ComputeDomain %s/%s (%s), clique %q.\n", s.DomainNamespace, s.DomainName, s.DomainID, s.CliqueID)
	}
	for _, kv := range [][2]string{
		{"LOG_FILE_NAME", ""},
		{"LOG_LEVEL", "4"},
		{"LOG_APPEND_TO_LOG", "1"},
		{"LOG_FILE_MAX_SIZE", "1024"},
		{"LOG_USE_SYSLOG", "0"},
		{imex.KeyServerBindIP, s.IPAddress},
		{imex.KeyServerPort, fmt.Sprint(imex.ServerPort)},
		{"ENABLE_AUTH_ENCRYPTION", "0"},
		{"IMEX_CONN_WAIT_TIMEOUT", "70"},
		{imex.KeyCmdBindIP, s.IPAddress},
		{imex.KeyCmdPort, fmt.Sprint(imex.CommandPort)},
		{"IMEX_CMD_ENABLED", "1"},
		{imex.KeyNodeConfigFile, s.NodesPath()},
		{"IMEX_WAIT_FOR_QUORUM", "RECOVERY"},
	} {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], kv[1])
	}
	return b.Bytes(), nil
}

// RenderNodes returns the nodes file: one peer address per line, in the
// order given (the caller sorts by ensemble index, so the file is stable). The
// list includes the node itself, as nvidia-imex expects.
func RenderNodes(addresses []string) ([]byte, error) {
	var b bytes.Buffer
	seen := map[string]bool{}
	for _, a := range addresses {
		if net.ParseIP(a) == nil {
			return nil, fmt.Errorf("render IMEX nodes file: peer address %q must be an IPv4 or IPv6 address", a)
		}
		if seen[a] {
			return nil, fmt.Errorf("render IMEX nodes file: peer address %q listed twice", a)
		}
		seen[a] = true
		b.WriteString(a + "\n")
	}
	return b.Bytes(), nil
}
