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

package cliqueplacement

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// EscapeCheckInterval is how often, at most, a domain whose pods wait for more (held for the clique placement,
// or a PodGroup gang not yet scheduled) lists its namespace's pods for those of its pods that were admitted
// without the pod-group webhook's mark: a live read of every pod of the namespace, so not at each of the events
// of a Job creating a thousand pods.
const EscapeCheckInterval = 30 * time.Second

// Escapes finds the pods of a domain that the pod-group webhook never marked: the API server could not call it
// (its failure policy is Ignore), so they carry neither the placement label nor a scheduling group. They never
// join the domain's gang, held or PodGroup, which then waits for them for good. Safe for concurrent use.
type Escapes struct {
	reader client.Reader
	// checks holds, by domain name, the last look (escapeCheck).
	checks sync.Map
}

// NewEscapes looks for escaped pods through reader, live (the pod caches hold only marked pods).
func NewEscapes(reader client.Reader) *Escapes { return &Escapes{reader: reader} }

// escapeCheck is the last look for a domain's pods that were not marked.
type escapeCheck struct {
	at       time.Time
	uid      types.UID
	template string
	escaped  []string
}

// Of returns the names of the domain's escaped pods, sorted, as the last look found them; a look older than
// EscapeCheckInterval, or of another incarnation or claim template of the domain, is made again.
func (e *Escapes) Of(ctx context.Context, cd *v1beta1.ComputeDomain) ([]string, error) {
	template := cd.Spec.Channel.ResourceClaimTemplate.Name
	key := client.ObjectKeyFromObject(cd)
	last, _ := e.checks.Load(key)
	check, _ := last.(escapeCheck)
	if check.uid == cd.UID && check.template == template && time.Since(check.at) < EscapeCheckInterval {
		return check.escaped, nil
	}
	escaped, err := e.list(ctx, cd.Namespace, template)
	if err != nil {
		return nil, err
	}
	e.checks.Store(key, escapeCheck{at: time.Now(), uid: cd.UID, template: template, escaped: escaped})
	return escaped, nil
}

// Forget drops the last look of a domain that is gone or waits no more.
func (e *Escapes) Forget(key types.NamespacedName) { e.checks.Delete(key) }

// forgetAll drops every look (tests: the next look without waiting for EscapeCheckInterval).
func (e *Escapes) forgetAll() { e.checks.Clear() }

// list lists, live, the pods of namespace that use the claim template but carry no placement label (the webhook
// labels every pod it holds, places or has join a PodGroup): running or waiting, not finished, and not in a
// scheduling group (the webhook leaves a pod that names one alone). Sorted by name.
func (e *Escapes) list(ctx context.Context, namespace, template string) ([]string, error) {
	var pods corev1.PodList
	if err := e.reader.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list the pods of namespace %s for those of the domain that the pod-group webhook did not mark: %w", namespace, err)
	}
	var names []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if _, labeled := p.Labels[v1beta1.PlacementDomainLabelKey]; labeled || finished(p) || p.Spec.SchedulingGroup != nil {
			continue
		}
		for _, c := range p.Spec.ResourceClaims {
			if c.ResourceClaimTemplateName != nil && *c.ResourceClaimTemplateName == template {
				names = append(names, p.Name)
				break
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// maxPodsNamed is how many pods a verdict names before it counts the rest.
const maxPodsNamed = 5

// NamePods is names for a message: the first maxPodsNamed, then how many more.
func NamePods(names []string) string {
	if len(names) > maxPodsNamed {
		names = append(names[:maxPodsNamed:maxPodsNamed], fmt.Sprintf("and %d more", len(names)-maxPodsNamed))
	}
	return strings.Join(names, ", ")
}
