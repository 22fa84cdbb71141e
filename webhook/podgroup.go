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

package webhook

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/sliceplan"
	"github.com/computedomain-operator/computedomain-operator/internal/workloadapi"
)

// PodGroupPath is the path of the mutating webhook that makes a ComputeDomain's workload pods join the
// domain's PodGroup; the chart's MutatingWebhookConfiguration names it.
const PodGroupPath = "/mutate-pod-podgroup"

// ClaimTemplateField indexes ComputeDomains by their workload claim template's name
// (spec.channel.resourceClaimTemplate.name).
const ClaimTemplateField = "spec.channel.resourceClaimTemplate.name"

// ClaimTemplateOf is the ClaimTemplateField index function.
func ClaimTemplateOf(o client.Object) []string {
	cd, ok := o.(*v1beta1.ComputeDomain)
	if !ok {
		return nil
	}
	return []string{cd.Spec.Channel.ResourceClaimTemplate.Name}
}

// PodGroupHandler is the mutating handler for pod creation: a pod that uses a ComputeDomain's workload claim
// template and names no scheduling group of its own is labeled with its domain and placed with it (Default).
// p says what the cluster serves and the slice plan's clique size. domains reads ComputeDomains (a cache
// indexed by ClaimTemplateField).
func PodGroupHandler(scheme *runtime.Scheme, domains client.Reader, p Placement) http.Handler {
	return admission.WithDefaulter[*corev1.Pod](scheme, podGroupJoiner{domains: domains, placement: p})
}

// Placement is what the pod webhook knows of the cluster, looked up once at start as the controller does.
type Placement struct {
	// WorkloadAPI: the cluster serves PodGroups (workloadapi.Served).
	WorkloadAPI bool
	// CompositePodGroups: it serves CompositePodGroups too (workloadapi.CompositeServed).
	CompositePodGroups bool
	// MaxNodesPerClique is the slice plan's clique size, the controller's --max-nodes-per-clique.
	MaxNodesPerClique int
}

// podGroupJoiner sets spec.schedulingGroup.podGroupName, or holds the pod for its clique.
type podGroupJoiner struct {
	domains   client.Reader
	placement Placement
}

// HoldForClique holds a pod of the domain named domain behind v1beta1.CliquePlacementGate, for the controller
// to pin it to the NVLink clique of its slice: the fallback when the cluster lacks the Workload API (or the
// composite groups a domain larger than one clique needs, or the pod carries no rank).
func HoldForClique(pod *corev1.Pod, domain string) {
	labelWithDomain(pod, domain)
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == v1beta1.CliquePlacementGate {
			return
		}
	}
	pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: v1beta1.CliquePlacementGate})
}

// labelWithDomain labels the pod with v1beta1.PlacementDomainLabelValue of its domain's name (a label value
// that fits whatever the name's length), so the controller finds the domain's pods for its slices.
func labelWithDomain(pod *corev1.Pod, domain string) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[v1beta1.PlacementDomainLabelKey] = v1beta1.PlacementDomainLabelValue(domain)
}

// Default places the pod with the first domain whose workload claim template it uses, when that domain has
// spec.numNodes: the controller makes no PodGroup without it, and a pod that names a PodGroup that never
// comes is never scheduled. A pod that names a scheduling group keeps it. The domain's slice plan decides:
//   - one slice: with the Workload API the pod joins the domain's PodGroup; without it the pod is held for the
//     controller's clique placement;
//   - more: with composite groups a pod with a rank (sliceplan.RankOf) within the plan joins its slice's
//     PodGroup; otherwise (no composite groups, no rank, or a plan the controller refuses) it is held for the
//     controller, which places held pods slice by slice.
func (j podGroupJoiner) Default(ctx context.Context, pod *corev1.Pod) error {
	if pod.Spec.SchedulingGroup != nil {
		return nil
	}
	ns := pod.Namespace
	if req, err := admission.RequestFromContext(ctx); err == nil && req.Namespace != "" {
		ns = req.Namespace
	}
	for _, c := range pod.Spec.ResourceClaims {
		if c.ResourceClaimTemplateName == nil {
			continue
		}
		var domains v1beta1.ComputeDomainList
		if err := j.domains.List(ctx, &domains, client.InNamespace(ns), client.MatchingFields{ClaimTemplateField: *c.ResourceClaimTemplateName}); err != nil {
			return fmt.Errorf("find the ComputeDomain of claim template %s/%s: %w", ns, *c.ResourceClaimTemplateName, err)
		}
		// Two domains naming one template: only one controls it, and the pod's claim says nothing of which.
		if len(domains.Items) != 1 || domains.Items[0].Spec.NumNodes == 0 {
			continue
		}
		cd := &domains.Items[0]
		group, why := j.groupOf(cd, pod)
		logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "generateName", pod.GenerateName, "computeDomain", klog.KObj(cd))
		if group == "" {
			HoldForClique(pod, cd.Name)
			logger.V(2).Info("Pod held for its ComputeDomain's clique placement", "why", why)
			return nil
		}
		labelWithDomain(pod, cd.Name)
		workloadapi.JoinPodGroup(&pod.Spec, group)
		logger.V(2).Info("Pod joins its ComputeDomain's PodGroup", "podGroup", group)
		return nil
	}
	return nil
}

// groupOf is the PodGroup the domain's pod joins, or "" and why when it is held for the controller instead.
func (j podGroupJoiner) groupOf(cd *v1beta1.ComputeDomain, pod *corev1.Pod) (string, string) {
	if !j.placement.WorkloadAPI {
		return "", "the cluster serves no PodGroups"
	}
	plan, err := sliceplan.ForDomain(cd, j.placement.MaxNodesPerClique)
	switch {
	case err != nil:
		return "", err.Error()
	case len(plan.Slices) == 1:
		return v1beta1.ComputeDomainPodGroupName(cd), ""
	case !j.placement.CompositePodGroups:
		return "", "the domain is placed in slices and the cluster serves no CompositePodGroups"
	}
	rank, ok, err := sliceplan.RankOf(pod.Labels, pod.Annotations)
	switch {
	case err != nil:
		return "", err.Error()
	case !ok:
		return "", "the pod carries no rank, so its slice is the controller's to choose"
	}
	slice, in := plan.SliceOf(rank)
	if !in {
		return "", fmt.Sprintf("rank %d is outside the domain's %d ranks", rank, plan.Nodes())
	}
	return v1beta1.ComputeDomainSlicePodGroupName(cd, slice.Index), ""
}
