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

package daemon

import (
	"context"
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// PodRef names the daemon's own Pod, the owner of its member record (so the
// garbage collector removes the record with the pod).
type PodRef struct {
	Name, Namespace string
	UID             types.UID
}

// MemberRecord is this node's ComputeDomainMember. The daemon is its only
// writer: spec and status are each written with server-side apply under the
// field owner compute-domain-daemon, and only when they change.
type MemberRecord struct {
	client client.Client
	pod    PodRef
	spec   v1beta1.ComputeDomainMemberSpec
	writes atomic.Int64
}

// NewMemberRecord returns the record of spec.nodeName in the domain
// spec.domainUID, in the pod's namespace.
func NewMemberRecord(c client.Client, pod PodRef, spec v1beta1.ComputeDomainMemberSpec) *MemberRecord {
	return &MemberRecord{client: c, pod: pod, spec: spec}
}

// Name is the record's deterministic name.
func (r *MemberRecord) Name() string {
	return v1beta1.ComputeDomainMemberName(r.spec.NodeName, types.UID(r.spec.DomainUID))
}

// Key is the record's namespace and name.
func (r *MemberRecord) Key() client.ObjectKey {
	return client.ObjectKey{Namespace: r.pod.Namespace, Name: r.Name()}
}

// Writes counts the API writes made so far (for the formation benchmark).
func (r *MemberRecord) Writes() int64 { return r.writes.Load() }

// ApplySpec creates the record, or brings its labels, owner and spec back to
// what this daemon says (one server-side apply).
func (r *MemberRecord) ApplySpec(ctx context.Context) error {
	obj := r.intent()
	obj.Object["metadata"].(map[string]any)["labels"] = map[string]any{v1beta1.ComputeDomainLabelKey: r.spec.DomainUID}
	obj.Object["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{
		"apiVersion":         "v1",
		"kind":               "Pod",
		"name":               r.pod.Name,
		"uid":                string(r.pod.UID),
		"controller":         true,
		"blockOwnerDeletion": false,
	}}
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&r.spec)
	if err != nil {
		return fmt.Errorf("apply member %s spec: %w", r.Key(), err)
	}
	obj.Object["spec"] = spec
	r.writes.Add(1)
	if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(v1beta1.ComputeDomainMemberFieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply member %s spec: %w", r.Key(), err)
	}
	return nil
}

// ApplyStatus writes the record's status (one server-side apply of the status
// subresource).
func (r *MemberRecord) ApplyStatus(ctx context.Context, status v1beta1.ComputeDomainMemberStatus) error {
	obj := r.intent()
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return fmt.Errorf("apply member %s status: %w", r.Key(), err)
	}
	// ready=false must be sent, not omitted: omitting it would leave an earlier
	// true in place.
	st["ready"] = status.Ready
	obj.Object["status"] = st
	r.writes.Add(1)
	if err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(v1beta1.ComputeDomainMemberFieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply member %s status: %w", r.Key(), err)
	}
	return nil
}

func (r *MemberRecord) intent() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1beta1.GroupVersion.String(),
		"kind":       "ComputeDomainMember",
		"metadata":   map[string]any{"name": r.Name(), "namespace": r.pod.Namespace},
	}}
}

// Get reads the record back (tests, and the daemon after a restart).
func (r *MemberRecord) Get(ctx context.Context) (*v1beta1.ComputeDomainMember, error) {
	var m v1beta1.ComputeDomainMember
	if err := r.client.Get(ctx, r.Key(), &m); err != nil {
		return nil, err
	}
	return &m, nil
}
