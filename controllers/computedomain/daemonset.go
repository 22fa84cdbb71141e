package computedomain

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// DaemonSet builds the domain's IMEX daemon DaemonSet in the operator namespace. It selects the nodes
// that carry the domain's node label, which each node's compute-domain kubelet plugin sets while a
// workload claim of the domain is prepared there, so a daemon runs exactly where the workload runs.
// Each daemon pod gets one daemon device through the domain's daemon claim template.
func DaemonSet(cd *v1beta1.ComputeDomain, cfg Config) *appsv1.DaemonSet {
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
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: domainAnnotations(cd)},
				Spec: corev1.PodSpec{
					ServiceAccountName:            cfg.DaemonServiceAccount,
					NodeSelector:                  map[string]string{v1beta1.ComputeDomainNodeLabel(cd.UID): "true"},
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

// ensureDaemonSet creates the domain's DaemonSet, or updates it when the fields the controller decides
// (selector, pod template) drifted, for example after the daemon image changed. An unchanged DaemonSet
// costs no write.
func (r *Reconciler) ensureDaemonSet(ctx context.Context, cd *v1beta1.ComputeDomain) error {
	want := DaemonSet(cd, r.cfg)
	got, err := r.createIfMissing(ctx, want, &appsv1.DaemonSet{})
	if err != nil {
		return fmt.Errorf("DaemonSet %s/%s: %w", want.Namespace, want.Name, err)
	}
	if got == want {
		return nil
	}
	existing := got.(*appsv1.DaemonSet)
	if daemonSetMatches(existing, want) {
		return nil
	}
	updated := existing.DeepCopy()
	updated.Labels = mergeMaps(updated.Labels, want.Labels)
	updated.Annotations = mergeMaps(updated.Annotations, want.Annotations)
	updated.Spec.Template = want.Spec.Template
	if err := r.client.Patch(ctx, updated, client.MergeFromWithOptions(existing, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("update DaemonSet %s/%s: %w", want.Namespace, want.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated DaemonSet", "daemonSet", klog.KObj(updated))
	return nil
}

// daemonSetMatches compares what the controller sets, ignoring what the API server defaults.
func daemonSetMatches(got, want *appsv1.DaemonSet) bool {
	g, w := got.Spec.Template.Spec, want.Spec.Template.Spec
	if len(g.Containers) != 1 {
		return false
	}
	gc, wc := g.Containers[0], w.Containers[0]
	return equality.Semantic.DeepEqual(g.NodeSelector, w.NodeSelector) &&
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
