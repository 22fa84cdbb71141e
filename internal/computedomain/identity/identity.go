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

// Package identity is the contract between the compute-domain kubelet plugin
// and the IMEX daemon: the environment and the config mount the plugin
// injects into the daemon container when it prepares a daemon claim.
package identity

import (
	"errors"
	"fmt"
	"strings"
)

// Environment variables of the daemon container.
const (
	EnvDomainUID       = "COMPUTE_DOMAIN_UUID"
	EnvDomainName      = "COMPUTE_DOMAIN_NAME"
	EnvDomainNamespace = "COMPUTE_DOMAIN_NAMESPACE"
	// EnvCliqueID is the node's NVLink clique (ours); empty on a node without
	// a multi-node fabric.
	EnvCliqueID = "COMPUTE_DOMAIN_CLIQUE_ID"
	// EnvConfigDir is where the per-domain config directory is mounted (ours).
	EnvConfigDir = "COMPUTE_DOMAIN_CONFIG_DIR"
)

// ContainerConfigDir is the mount point of the per-domain IMEX config
// directory inside the daemon container (nvidia-imex's usual directory).
const ContainerConfigDir = "/etc/nvidia-imex"

// Identity is what a daemon knows about its domain and node.
type Identity struct {
	DomainUID       string
	DomainName      string
	DomainNamespace string
	CliqueID        string
	ConfigDir       string
}

// Env renders the identity as KEY=VALUE pairs, in a fixed order.
func (i Identity) Env() []string {
	return []string{
		EnvDomainUID + "=" + i.DomainUID,
		EnvDomainName + "=" + i.DomainName,
		EnvDomainNamespace + "=" + i.DomainNamespace,
		EnvCliqueID + "=" + i.CliqueID,
		EnvConfigDir + "=" + i.ConfigDir,
	}
}

// FromEnv reads the identity through getenv (os.Getenv in a container, a map
// lookup for an in-process daemon). The domain's UID, name and namespace are
// required; the clique may be empty; ConfigDir defaults to
// ContainerConfigDir.
func FromEnv(getenv func(string) string) (Identity, error) {
	id := Identity{
		DomainUID:       getenv(EnvDomainUID),
		DomainName:      getenv(EnvDomainName),
		DomainNamespace: getenv(EnvDomainNamespace),
		CliqueID:        getenv(EnvCliqueID),
		ConfigDir:       getenv(EnvConfigDir),
	}
	if id.ConfigDir == "" {
		id.ConfigDir = ContainerConfigDir
	}
	var errs []error
	for _, f := range [][2]string{{EnvDomainUID, id.DomainUID}, {EnvDomainName, id.DomainName}, {EnvDomainNamespace, id.DomainNamespace}} {
		if f[1] == "" {
			errs = append(errs, fmt.Errorf("environment variable %s must be set (the compute-domain kubelet plugin injects it with the daemon claim)", f[0]))
		}
	}
	for _, v := range id.Env() {
		if strings.ContainsAny(v, "\n\r") {
			errs = append(errs, fmt.Errorf("%q must be a single line", v))
		}
	}
	return id, errors.Join(errs...)
}

// EnvMap turns KEY=VALUE pairs into a getenv function for FromEnv.
func EnvMap(env []string) func(string) string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}
