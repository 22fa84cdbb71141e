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
// template and names no scheduling group of its own joins the domain's PodGroup when the cluster serves the
// Workload API (workloadAPI), and otherwise is held for the controller's clique placement (HoldForClique).
// domains reads ComputeDomains (a cache indexed by ClaimTemplateField).
func PodGroupHandler(scheme *runtime.Scheme, domains client.Reader, workloadAPI bool) http.Handler {
	return admission.WithDefaulter[*corev1.Pod](scheme, podGroupJoiner{domains: domains, workloadAPI: workloadAPI})
}

// podGroupJoiner sets spec.schedulingGroup.podGroupName, or holds the pod for its clique.
type podGroupJoiner struct {
	domains     client.Reader
	workloadAPI bool
}

// HoldForClique holds a pod of the domain named domain behind v1beta1.CliquePlacementGate, labeled with
// v1beta1.PlacementDomainLabelValue of that name (a label value that fits whatever the name's length), for the
// controller to pin it to one NVLink clique: the fallback when the cluster lacks the Workload API.
func HoldForClique(pod *corev1.Pod, domain string) {
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == v1beta1.CliquePlacementGate {
			return
		}
	}
	pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: v1beta1.CliquePlacementGate})
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[v1beta1.PlacementDomainLabelKey] = v1beta1.PlacementDomainLabelValue(domain)
}

// Default places the pod with the first domain whose workload claim template it uses, when that domain has
// spec.numNodes: the controller makes no PodGroup without it, and a pod that names a PodGroup that never
// comes is never scheduled. With the Workload API the pod joins the domain's PodGroup; without it the pod is
// held for the controller's clique placement. A pod that names a scheduling group keeps it.
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
		if !j.workloadAPI {
			HoldForClique(pod, cd.Name)
			klog.FromContext(ctx).V(2).Info("Pod held for its ComputeDomain's clique placement", "pod", klog.KObj(pod), "generateName", pod.GenerateName,
				"computeDomain", klog.KObj(cd))
			return nil
		}
		workloadapi.JoinPodGroup(&pod.Spec, v1beta1.ComputeDomainPodGroupName(cd))
		klog.FromContext(ctx).V(2).Info("Pod joins its ComputeDomain's PodGroup", "pod", klog.KObj(pod), "generateName", pod.GenerateName,
			"computeDomain", klog.KObj(cd), "podGroup", v1beta1.ComputeDomainPodGroupName(cd))
		return nil
	}
	return nil
}
