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
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// DaemonContainerName is the name of the IMEX daemon container.
const DaemonContainerName = "compute-domain-daemon"

// daemonTerminationGracePeriod is short: the daemon stops IMEX and exits on SIGTERM, and a daemon pod must
// never hold up a node's teardown.
const daemonTerminationGracePeriod = 10

// DaemonSet builds the domain's IMEX daemon DaemonSet in the operator namespace, running one daemon on each
// of nodes: the nodes where the domain's workload claims are allocated (see WorkloadNodes). The controller
// rewrites the node list as the workload comes and goes and labels no node to place them. Updates are OnDelete:
// a new node list or daemon image never restarts the IMEX daemon of a running workload; new nodes get the
// current template. Each daemon pod gets one daemon device through the domain's daemon claim template.
func DaemonSet(cd *v1beta1.ComputeDomain, cfg Config, nodes []string) *appsv1.DaemonSet {
	podLabels := map[string]string{
		ManagedByLabelKey:             ManagedByLabelValue,
		AppLabelKey:                   DaemonAppLabelValue,
		v1beta1.ComputeDomainLabelKey: string(cd.UID),
	}
	labels := domainLabels(cd)
	labels[AppLabelKey] = DaemonAppLabelValue
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return &appsv1.DaemonSet{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        DaemonSetName(cd.UID),
			Namespace:   cfg.OperatorNamespace,
			Labels:      labels,
			Annotations: domainAnnotations(cd),
		},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{
				AppLabelKey:                   DaemonAppLabelValue,
				v1beta1.ComputeDomainLabelKey: string(cd.UID),
			}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: domainAnnotations(cd)},
				Spec: corev1.PodSpec{
					ServiceAccountName:            cfg.DaemonServiceAccount,
					Affinity:                      &corev1.Affinity{NodeAffinity: onNodes(nodes)},
					Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					TerminationGracePeriodSeconds: ptr.To[int64](daemonTerminationGracePeriod),
					ResourceClaims: []corev1.PodResourceClaim{{
						Name:                      DaemonRequestName,
						ResourceClaimTemplateName: ptr.To(DaemonClaimTemplateName(cd.UID)),
					}},
					Containers: []corev1.Container{{
						Name:            DaemonContainerName,
						Image:           cfg.DaemonImage,
						ImagePullPolicy: cfg.DaemonImagePullPolicy,
						Command:         cfg.DaemonCommand,
						// The operator image runs as an unprivileged user by default; IMEX talks to the
						// driver and its channel devices as root.
						SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0)},
						Args: []string{
							"--node-name=$(NODE_NAME)",
							"--pod-name=$(POD_NAME)",
							"--pod-namespace=$(POD_NAMESPACE)",
							"--pod-uid=$(POD_UID)",
							"--ip-address=$(POD_IP)",
						},
						Env: []corev1.EnvVar{
							fieldEnv("NODE_NAME", "spec.nodeName"),
							fieldEnv("POD_NAME", "metadata.name"),
							fieldEnv("POD_NAMESPACE", "metadata.namespace"),
							fieldEnv("POD_UID", "metadata.uid"),
							fieldEnv("POD_IP", "status.podIP"),
						},
						Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: DaemonRequestName}}},
					}},
				},
			},
		},
	}
}

// onNodes is a required node affinity that matches exactly the named nodes: one term per node, since a
// node field requirement may hold only one value (terms are ORed).
func onNodes(nodes []string) *corev1.NodeAffinity {
	terms := make([]corev1.NodeSelectorTerm, 0, len(nodes))
	for _, n := range nodes {
		terms = append(terms, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: nodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{n},
		}}})
	}
	return &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}
}

// placeDaemons makes the domain's IMEX daemons run on exactly nodes: it creates the DaemonSet for the
// first node, rewrites its node list as nodes come and go (one merge patch per change, no optimistic lock:
// the controller is the only writer of the spec), and deletes it after the last node leaves. An unchanged
// node list costs no write, also right after a change (see currentDaemonSet).
func (r *Reconciler) placeDaemons(ctx context.Context, cd *v1beta1.ComputeDomain, nodes []string) error {
	key := client.ObjectKey{Namespace: r.cfg.OperatorNamespace, Name: DaemonSetName(cd.UID)}
	current, err := r.currentDaemonSet(ctx, cd, key)
	if err != nil {
		return err
	}
	if len(nodes) == 0 {
		if current == nil {
			return nil
		}
		return r.deleteDaemonSet(ctx, cd, key, current.UID)
	}
	want := DaemonSet(cd, r.cfg, nodes)
	if current == nil {
		created, err := r.createDaemonSet(ctx, want)
		if err != nil {
			return err
		}
		if created == want {
			r.expectations.expectDaemonSet(cd, daemonSetExpectation{uid: want.UID, generation: want.Generation, nodes: nodes})
			klog.FromContext(ctx).V(2).Info("Created DaemonSet", "daemonSet", klog.KObj(want), "nodes", len(nodes))
			return nil
		}
		current = created
	}
	if !current.DeletionTimestamp.IsZero() {
		return nil // its deletion brings another reconcile, which creates it anew
	}
	if daemonSetMatches(current, want) {
		return nil
	}
	return r.patchDaemonSet(ctx, cd, current, want, nodes)
}

// currentDaemonSet is the domain's DaemonSet as the controller should see it, nil when there is none. The
// informer cache lags behind the controller's own writes, so where it has not caught up with the
// controller's expectation (the state its last write in this process left the DaemonSet in), the expected
// DaemonSet stands in for it: one deleted by the controller is gone even while the cache still shows it, and
// one it created or patched has the node list it wrote.
func (r *Reconciler) currentDaemonSet(ctx context.Context, cd *v1beta1.ComputeDomain, key client.ObjectKey) (*appsv1.DaemonSet, error) {
	cached := &appsv1.DaemonSet{}
	if err := r.client.Get(ctx, key, cached); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get DaemonSet %s: %w", key, err)
		}
		cached = nil
	}
	expected, ok := r.expectations.daemonSet(cd.UID)
	switch {
	case !ok:
		return cached, nil
	case expected.deleted:
		if cached != nil && cached.UID == expected.uid {
			return nil, nil
		}
		return cached, nil
	case cached == nil || (cached.UID == expected.uid && cached.Generation < expected.generation):
		ds := DaemonSet(cd, r.cfg, expected.nodes)
		ds.UID, ds.Generation = expected.uid, expected.generation
		return ds, nil
	}
	return cached, nil
}

// patchDaemonSet brings the fields the controller sets from current to want.
func (r *Reconciler) patchDaemonSet(ctx context.Context, cd *v1beta1.ComputeDomain, current, want *appsv1.DaemonSet, nodes []string) error {
	base := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: want.Namespace, Name: want.Name, Labels: current.Labels, Annotations: current.Annotations},
		Spec:       current.Spec,
	}
	updated := base.DeepCopy()
	updated.Labels = mergeMaps(updated.Labels, want.Labels)
	updated.Annotations = mergeMaps(updated.Annotations, want.Annotations)
	updated.Spec.UpdateStrategy = want.Spec.UpdateStrategy
	updated.Spec.Template = want.Spec.Template
	if err := r.client.Patch(ctx, updated, client.MergeFrom(base)); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted behind our back: the next reconcile creates it anew.
			r.expectations.expectDaemonSet(cd, daemonSetExpectation{uid: current.UID, deleted: true})
		}
		return fmt.Errorf("update DaemonSet %s/%s: %w", want.Namespace, want.Name, err)
	}
	r.expectations.expectDaemonSet(cd, daemonSetExpectation{uid: updated.UID, generation: updated.Generation, nodes: nodes})
	klog.FromContext(ctx).V(2).Info("Updated DaemonSet", "daemonSet", klog.KObj(updated), "nodes", len(nodes))
	return nil
}

// createDaemonSet creates want unless the API server already has a DaemonSet of that name, which it
// returns instead. It asks the API server, not the cache, which may still show a DaemonSet this controller
// deleted or not yet show one it created.
func (r *Reconciler) createDaemonSet(ctx context.Context, want *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
	got, err := r.createUnlessLive(ctx, want, &appsv1.DaemonSet{})
	if err != nil {
		return nil, fmt.Errorf("DaemonSet %s/%s: %w", want.Namespace, want.Name, err)
	}
	return got.(*appsv1.DaemonSet), nil
}

// deleteDaemonSet deletes the domain's DaemonSet after its last workload node left; the garbage
// collector removes its pods.
func (r *Reconciler) deleteDaemonSet(ctx context.Context, cd *v1beta1.ComputeDomain, key client.ObjectKey, uid types.UID) error {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := r.client.Delete(ctx, ds, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete DaemonSet %s: %w", key, err)
	}
	r.expectations.expectDaemonSet(cd, daemonSetExpectation{uid: uid, deleted: true})
	klog.FromContext(ctx).V(2).Info("Deleted DaemonSet: the domain's workload holds no node", "daemonSet", key)
	return nil
}

// daemonSetMatches compares what the controller sets, ignoring what the API server defaults.
func daemonSetMatches(got, want *appsv1.DaemonSet) bool {
	g, w := got.Spec.Template.Spec, want.Spec.Template.Spec
	if len(g.Containers) != 1 {
		return false
	}
	gc, wc := g.Containers[0], w.Containers[0]
	return got.Spec.UpdateStrategy.Type == want.Spec.UpdateStrategy.Type &&
		equality.Semantic.DeepEqual(g.Affinity, w.Affinity) &&
		equality.Semantic.DeepEqual(g.NodeSelector, w.NodeSelector) &&
		equality.Semantic.DeepEqual(g.ResourceClaims, w.ResourceClaims) &&
		equality.Semantic.DeepEqual(g.Tolerations, w.Tolerations) &&
		g.ServiceAccountName == w.ServiceAccountName &&
		gc.Name == wc.Name && gc.Image == wc.Image && gc.ImagePullPolicy == wc.ImagePullPolicy &&
		equality.Semantic.DeepEqual(gc.Command, wc.Command) &&
		equality.Semantic.DeepEqual(gc.Args, wc.Args) &&
		equality.Semantic.DeepEqual(gc.Resources.Claims, wc.Resources.Claims) &&
		containsAll(got.Spec.Template.Labels, want.Spec.Template.Labels)
}

func containsAll(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func mergeMaps(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
