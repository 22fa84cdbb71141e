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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// indexed by ClaimTemplateField); live reads them from the API server, for a pod whose templates name no
// domain the cache knows (see podGroupJoiner.domainOf).
func PodGroupHandler(scheme *runtime.Scheme, domains, live client.Reader, p Placement) http.Handler {
	return admission.WithDefaulter[*corev1.Pod](scheme, podGroupJoiner{domains: domains, live: live, placement: p})
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
	// domains is the cache of ComputeDomains, indexed by ClaimTemplateField.
	domains client.Reader
	// live reads ComputeDomains from the API server.
	live      client.Reader
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
	cd, err := j.domainOf(ctx, ns, &pod.Spec)
	if err != nil {
		// Our own status, not the API server's: controller-runtime answers with the status of an API error
		// alone, and the API server's 401 to the webhook ("Unauthorized") would read as the requester's
		// credentials being refused, with nothing of what failed.
		return apierrors.NewInternalError(fmt.Errorf("computedomain-operator pod webhook: %w; the pod is refused rather than admitted perhaps outside a ComputeDomain's gang: create it again", err))
	}
	if cd == nil {
		return nil
	}
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

// domainOf is the domain with spec.numNodes whose workload claim template the pod uses (the first such
// template's), or nil. The cache answers first. When it knows no domain for any of the pod's templates, the
// API server is asked (one list of the namespace's ComputeDomains): a domain created a moment before its pods,
// as one `kubectl apply -f` of both does, may not have reached the cache yet, and a pod admitted without its
// group while the domain's other pods join it leaves the gang short of its minCount for good. So a pod of no
// domain (a plain GPU pod with a claim template) costs one live list; a pod of a cached domain costs none.
func (j podGroupJoiner) domainOf(ctx context.Context, ns string, spec *corev1.PodSpec) (*v1beta1.ComputeDomain, error) {
	var templates []string
	for _, c := range spec.ResourceClaims {
		if c.ResourceClaimTemplateName != nil {
			templates = append(templates, *c.ResourceClaimTemplateName)
		}
	}
	known := false
	for _, t := range templates {
		var domains v1beta1.ComputeDomainList
		if err := j.domains.List(ctx, &domains, client.InNamespace(ns), client.MatchingFields{ClaimTemplateField: t}); err != nil {
			return nil, fmt.Errorf("find the ComputeDomain of claim template %s/%s: %w", ns, t, err)
		}
		known = known || len(domains.Items) > 0
		if cd := gangDomain(domains.Items); cd != nil {
			return cd, nil
		}
	}
	if known || j.live == nil || len(templates) == 0 {
		return nil, nil
	}
	var all v1beta1.ComputeDomainList
	if err := j.live.List(ctx, &all, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("find the ComputeDomain of claim templates %v in namespace %s (none in the webhook's cache yet): %w", templates, ns, err)
	}
	for _, t := range templates {
		var named []v1beta1.ComputeDomain
		for _, cd := range all.Items {
			if cd.Spec.Channel.ResourceClaimTemplate.Name == t {
				named = append(named, cd)
			}
		}
		if cd := gangDomain(named); cd != nil {
			klog.FromContext(ctx).V(2).Info("ComputeDomain found by the API server before the webhook's cache", "computeDomain", klog.KObj(cd), "claimTemplate", t)
			return cd, nil
		}
	}
	return nil, nil
}

// gangDomain is the one domain naming a template, when it has spec.numNodes: two domains naming one template
// leave the pod alone (only one controls the template, and the pod's claim says nothing of which), and for a
// domain without numNodes the controller makes no PodGroup (a pod that names one that never comes is never
// scheduled).
func gangDomain(named []v1beta1.ComputeDomain) *v1beta1.ComputeDomain {
	if len(named) != 1 || named[0].Spec.NumNodes == 0 {
		return nil
	}
	return &named[0]
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
