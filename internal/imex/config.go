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

package imex

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
)

// Keys of the nvidia-imex config file that Config reads; nvidia-imex has many
// more, which ParseConfig ignores.
const (
	KeyServerBindIP   = "SERVER_BIND_IP"
	KeyServerPort     = "SERVER_PORT"
	KeyCmdBindIP      = "IMEX_CMD_BIND_INTERFACE_IP"
	KeyCmdPort        = "IMEX_CMD_PORT"
	KeyNodeConfigFile = "IMEX_NODE_CONFIG_FILE"
)

// Ports of nvidia-imex: peers talk on ServerPort, the command (status) port
// is CommandPort. They are nvidia-imex's defaults, what the daemon writes and
// what ParseConfig assumes when a key is absent.
const (
	ServerPort  = 50000
	CommandPort = 50005
)

// Config is what is read back from an nvidia-imex config file: the addresses
// and the nodes file (the stand-in's whole configuration).
type Config struct {
	// BindIP is the address the daemon listens on for peers and dials from;
	// empty means every address (and no address is recognized as itself).
	BindIP string
	// ServerPort is the peer port, the same on every node.
	ServerPort int
	// CmdBindIP is the address of the command port; empty means BindIP, or
	// 127.0.0.1 when that is empty too.
	CmdBindIP string
	// CmdPort is the command (query) port.
	CmdPort int
	// NodesFile lists the peers, one address per line.
	NodesFile string
}

// PeerAddress is the listen address for peers.
func (c Config) PeerAddress() string {
	return net.JoinHostPort(c.BindIP, strconv.Itoa(c.ServerPort))
}

// CmdAddress is the command port's address, for the daemon and the query tool.
func (c Config) CmdAddress() string {
	host := c.CmdBindIP
	if host == "" {
		host = c.BindIP
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(c.CmdPort))
}

// LoadConfig reads and parses an nvidia-imex config file.
func LoadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read IMEX config: %w", err)
	}
	cfg, err := ParseConfig(bytes.NewReader(raw))
	if err != nil {
		return Config{}, fmt.Errorf("IMEX config %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses key=value lines; '#' starts a comment line and unknown
// keys are ignored (nvidia-imex has many we do not need). IMEX_NODE_CONFIG_FILE
// is required; the ports default to 50000 and 50005.
func ParseConfig(r io.Reader) (Config, error) {
	cfg := Config{ServerPort: ServerPort, CmdPort: CommandPort}
	sc := bufio.NewScanner(r)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return Config{}, fmt.Errorf("line %d: %q is not key=value", lineNo, line)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		var err error
		switch key {
		case KeyServerBindIP:
			cfg.BindIP, err = parseIP(key, value)
		case KeyCmdBindIP:
			cfg.CmdBindIP, err = parseIP(key, value)
		case KeyServerPort:
			cfg.ServerPort, err = parsePort(key, value)
		case KeyCmdPort:
			cfg.CmdPort, err = parsePort(key, value)
		case KeyNodeConfigFile:
			cfg.NodesFile = value
		}
		if err != nil {
			return Config{}, fmt.Errorf("line %d: %w", lineNo, err)
		}
	}
	if err := sc.Err(); err != nil {
		return Config{}, err
	}
	if cfg.NodesFile == "" {
		return Config{}, fmt.Errorf("%s must name the nodes file", KeyNodeConfigFile)
	}
	return cfg, nil
}

func parseIP(key, value string) (string, error) {
	if value == "" {
		return "", nil
	}
	if net.ParseIP(value) == nil {
		return "", fmt.Errorf("%s=%q: must be an IP address or empty", key, value)
	}
	return value, nil
}

func parsePort(key, value string) (int, error) {
	port, err := strconv.Atoi(value)
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("%s=%q: must be a port number 1-65535", key, value)
	}
	return port, nil
}
