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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/controllers/computedomain/membership"
)

// Defaults of Config.
const (
	DefaultDriverName           = v1beta1.ComputeDomainDriverName
	DefaultChannelDeviceClass   = "compute-domain-default-channel.nvidia.com"
	DefaultDaemonDeviceClass    = "compute-domain-daemon.nvidia.com"
	DefaultDaemonServiceAccount = "compute-domain-daemon"
	DefaultDaemonCommand        = "compute-domain-daemon"
)

// Labels and annotations the controller puts on the objects it creates.
const (
	// ManagedByLabelKey / ManagedByLabelValue mark the objects this controller created; its caches only
	// hold claim templates and DaemonSets that carry them.
	ManagedByLabelKey   = "app.kubernetes.io/managed-by"
	ManagedByLabelValue = "compute-domain-controller"
	// AppLabelKey / DaemonAppLabelValue label the IMEX daemon pods.
	AppLabelKey         = "app.kubernetes.io/name"
	DaemonAppLabelValue = "compute-domain-daemon"
	// DomainNamespaceAnnotation and DomainNameAnnotation name the domain of an object in the operator
	// namespace (a label value cannot hold every name), so its events map back to the domain.
	DomainNamespaceAnnotation = "resource.nvidia.com/computeDomainNamespace"
	DomainNameAnnotation      = "resource.nvidia.com/computeDomainName"
)

// Config is what the reconciler needs to know about its installation.
type Config struct {
	// OperatorNamespace holds the per-domain DaemonSets, daemon claim templates and member records.
	OperatorNamespace string
	// DriverName is the compute-domain DRA driver that the claim templates' opaque configs address.
	DriverName string
	// ChannelDeviceClass and DaemonDeviceClass are the DeviceClasses of the workload and daemon claims.
	ChannelDeviceClass string
	DaemonDeviceClass  string
	// DaemonImage, DaemonImagePullPolicy, DaemonCommand and DaemonServiceAccount make up the IMEX daemon pods.
	DaemonImage           string
	DaemonImagePullPolicy corev1.PullPolicy
	DaemonCommand         []string
	DaemonServiceAccount  string
	// MaxNodesPerClique caps one clique's IMEX ensemble (18 on NVL72).
	MaxNodesPerClique int
	// MaxChannels is the number of IMEX channels per node (channel0..channel<MaxChannels-1>).
	MaxChannels int32
	// IMEXMode is who runs the domains' IMEX daemons: v1beta1.IMEXModeDomain (a DaemonSet per domain, the
	// default) or v1beta1.IMEXModeClique (the chart's long-lived daemon per node; see package imexclique).
	IMEXMode string
	// CliquePlacement turns on the clique placement fallback for clusters without the Workload API: pods the
	// webhook held behind v1beta1.CliquePlacementGate are pinned to one clique and released together.
	CliquePlacement bool
	// GPUDriverName is the DRA driver of the GPUs whose allocations make a node busy for the fallback's pick.
	GPUDriverName string
	// StatusWriteInterval is the shortest time between two status writes of one domain (0: none); changes
	// in between are written together at its end.
	StatusWriteInterval time.Duration
}

// CliqueMode tells whether domains are served by the long-lived per-node IMEX daemons.
func (c Config) CliqueMode() bool { return c.IMEXMode == v1beta1.IMEXModeClique }

// WithDefaults returns the config with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.DriverName == "" {
		c.DriverName = DefaultDriverName
	}
	if c.GPUDriverName == "" {
		c.GPUDriverName = v1beta1.GPUDriverName
	}
	if c.ChannelDeviceClass == "" {
		c.ChannelDeviceClass = DefaultChannelDeviceClass
	}
	if c.DaemonDeviceClass == "" {
		c.DaemonDeviceClass = DefaultDaemonDeviceClass
	}
	if c.DaemonServiceAccount == "" {
		c.DaemonServiceAccount = DefaultDaemonServiceAccount
	}
	if len(c.DaemonCommand) == 0 {
		c.DaemonCommand = []string{DefaultDaemonCommand}
	}
	if c.DaemonImagePullPolicy == "" {
		c.DaemonImagePullPolicy = corev1.PullIfNotPresent
	}
	if c.MaxNodesPerClique == 0 {
		c.MaxNodesPerClique = membership.MaxNodesPerClique
	}
	if c.MaxChannels == 0 {
		c.MaxChannels = DefaultMaxChannels
	}
	if c.IMEXMode == "" {
		c.IMEXMode = v1beta1.IMEXModeDomain
	}
	return c
}

// Validate names the first field that is unusable.
func (c Config) Validate() error {
	switch {
	case c.OperatorNamespace == "":
		return fmt.Errorf("operator namespace: must be set (the namespace the controller runs in)")
	case c.DaemonImage == "":
		return fmt.Errorf("daemon image: must be set (the image of the IMEX daemon pods)")
	case c.MaxNodesPerClique < 1:
		return fmt.Errorf("max nodes per clique: %d, must be at least 1", c.MaxNodesPerClique)
	case c.MaxChannels < FirstChannel+1:
		return fmt.Errorf("max channels: %d, must be at least %d", c.MaxChannels, FirstChannel+1)
	case c.IMEXMode != v1beta1.IMEXModeDomain && c.IMEXMode != v1beta1.IMEXModeClique:
		return fmt.Errorf("IMEX mode: %q, allowed values are %s and %s", c.IMEXMode, v1beta1.IMEXModeDomain, v1beta1.IMEXModeClique)
	}
	return nil
}

// DaemonSetName is the deterministic name of a domain's IMEX daemon DaemonSet.
func DaemonSetName(domainUID types.UID) string { return "cd-" + string(domainUID) }

// DaemonClaimTemplateName is the deterministic name of a domain's daemon ResourceClaimTemplate.
func DaemonClaimTemplateName(domainUID types.UID) string {
	return "cd-" + string(domainUID) + "-daemon"
}
