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

package v1beta1

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ComputeDomainPodGroupName is the name of the PodGroup (Kubernetes 1.37 Workload API, scheduling.k8s.io) that
// the controller keeps for a domain in the domain's namespace: the domain's own name, so a workload's pods
// join it with spec.schedulingGroup.podGroupName: <domain name>. Ours, not part of the compatible API.
func ComputeDomainPodGroupName(cd *ComputeDomain) string { return cd.Name }

// ComputeDomainCompositePodGroupName is the name of the CompositePodGroup (scheduling.k8s.io/v1alpha3) and of
// the Workload it comes from, which the controller keeps for a domain larger than one NVLink clique: the
// domain's name. Ours, not part of the compatible API.
func ComputeDomainCompositePodGroupName(cd *ComputeDomain) string { return cd.Name }

// ComputeDomainSlicePodGroupName is the name of the PodGroup of slice i of a domain larger than one clique:
// "<domain>-slice-<i>", with the domain's name shortened and hashed (as PlacementDomainLabelValue does) when
// the whole would exceed the 253 characters of an object name.
func ComputeDomainSlicePodGroupName(cd *ComputeDomain, i int) string {
	suffix := "-slice-" + strconv.Itoa(i)
	if len(cd.Name)+len(suffix) <= validation.DNS1123SubdomainMaxLength {
		return cd.Name + suffix
	}
	sum := sha256.Sum256([]byte(cd.Name))
	keep := validation.DNS1123SubdomainMaxLength - len(suffix) - 1 - placementLabelHashLen
	// A kept name that ends in '.' or '-' would leave an empty or badly formed DNS label before the hash.
	return strings.TrimRight(cd.Name[:keep], ".-") + "-" + hex.EncodeToString(sum[:])[:placementLabelHashLen] + suffix
}

// The clique placement fallback for clusters without the Workload API (ours): the webhook (webhook.podGroups)
// holds each pod of a domain with spec.numNodes behind CliquePlacementGate and labels it with
// PlacementDomainLabelKey; the controller, once all spec.numNodes pods exist, picks one NVLink clique with that
// many free nodes, and releases every pod with required node affinity to it, the clique recorded in
// PlacementCliqueAnnotationKey on the pod.
const (
	// CliquePlacementGate is the scheduling gate that holds a pod until the controller picked its clique.
	CliquePlacementGate = "resource.nvidia.com/clique-placement"
	// PlacementDomainLabelKey labels a held pod with its ComputeDomain (in the pod's namespace): the value is
	// PlacementDomainLabelValue of the domain's name.
	PlacementDomainLabelKey = "resource.nvidia.com/computeDomainPlacement"
	// PlacementCliqueAnnotationKey records on a released pod the clique the controller pinned it to.
	PlacementCliqueAnnotationKey = "resource.nvidia.com/placementClique"
)

// placementLabelNamePrefix is how much of a long domain name PlacementDomainLabelValue keeps: with "_" and
// placementLabelHashLen hex digits it is a label value's 63 characters.
const (
	placementLabelNamePrefix = validation.LabelValueMaxLength - 1 - placementLabelHashLen
	placementLabelHashLen    = 16
)

// PlacementDomainLabelValue is the value of PlacementDomainLabelKey on the pods of the domain named name (in
// their namespace): the name itself when it fits a label value (63 characters; a name is a DNS subdomain, so
// it is a valid label value then), and otherwise its first 46 characters, "_" and 16 hex digits of the
// SHA-256 of the whole name. A name never holds "_", so no name that fits reads as another's hashed value.
func PlacementDomainLabelValue(name string) string {
	if len(name) <= validation.LabelValueMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:placementLabelNamePrefix] + "_" + hex.EncodeToString(sum[:])[:placementLabelHashLen]
}
