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

// PodRef names the daemon's own Pod, the owner of its IMEXNode (so the
// garbage collector removes the record with the pod).
type PodRef struct {
	Name, Namespace string
	UID             types.UID
}

// Record is the API object through which a daemon reports its IMEX state: its node's IMEXNode. The daemon
// is its only writer.
type Record interface {
	// ApplySpec creates the record or brings its labels, owner and spec back to the daemon's.
	ApplySpec(ctx context.Context) error
	// ApplyStatus writes the record's status.
	ApplyStatus(ctx context.Context, status v1beta1.IMEXNodeStatus) error
	// Status reads the record's status back (a restarted daemon takes over its predecessor's report).
	Status(ctx context.Context) (*v1beta1.IMEXNodeStatus, error)
	// Key is the record's namespace and name.
	Key() client.ObjectKey
	// Writes counts the API writes made so far (for the formation benchmark).
	Writes() int64
}

// appliedRecord is a Record written with server-side apply: spec and status each under one field owner,
// owned by the daemon's Pod.
type appliedRecord struct {
	client     client.Client
	pod        PodRef
	kind       string
	name       string
	labels     map[string]any
	fieldOwner string
	spec       any
	// read returns an empty object of the kind and the status in it.
	read   func() (client.Object, func() v1beta1.IMEXNodeStatus)
	writes atomic.Int64
}

// NewIMEXNodeRecord returns the IMEXNode of spec.nodeName, in the pod's namespace: the record of a node's
// long-lived IMEX daemon.
func NewIMEXNodeRecord(c client.Client, pod PodRef, spec v1beta1.IMEXNodeSpec) Record {
	return &appliedRecord{
		client: c, pod: pod, kind: "IMEXNode",
		name:       spec.NodeName,
		labels:     map[string]any{},
		fieldOwner: v1beta1.IMEXNodeFieldOwner,
		spec:       &spec,
		read: func() (client.Object, func() v1beta1.IMEXNodeStatus) {
			n := &v1beta1.IMEXNode{}
			return n, func() v1beta1.IMEXNodeStatus { return n.Status }
		},
	}
}

// Name is the record's deterministic name.
func (r *appliedRecord) Name() string { return r.name }

// Key is the record's namespace and name.
func (r *appliedRecord) Key() client.ObjectKey {
	return client.ObjectKey{Namespace: r.pod.Namespace, Name: r.name}
}

// Writes counts the API writes made so far (for the formation benchmark).
func (r *appliedRecord) Writes() int64 { return r.writes.Load() }

// ApplySpec creates the record, or brings its labels, owner and spec back to
// what this daemon says (one server-side apply).
func (r *appliedRecord) ApplySpec(ctx context.Context) error {
	obj := r.intent()
	if len(r.labels) > 0 {
		obj.Object["metadata"].(map[string]any)["labels"] = r.labels
	}
	obj.Object["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{
		"apiVersion":         "v1",
		"kind":               "Pod",
		"name":               r.pod.Name,
		"uid":                string(r.pod.UID),
		"controller":         true,
		"blockOwnerDeletion": false,
	}}
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r.spec)
	if err != nil {
		return fmt.Errorf("apply %s %s spec: %w", r.kind, r.Key(), err)
	}
	obj.Object["spec"] = spec
	r.writes.Add(1)
	if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(r.fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s spec: %w", r.kind, r.Key(), err)
	}
	return nil
}

// ApplyStatus writes the record's status (one server-side apply of the status
// subresource).
func (r *appliedRecord) ApplyStatus(ctx context.Context, status v1beta1.IMEXNodeStatus) error {
	obj := r.intent()
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return fmt.Errorf("apply %s %s status: %w", r.kind, r.Key(), err)
	}
	// ready=false must be sent, not omitted: omitting it would leave an earlier
	// true in place.
	st["ready"] = status.Ready
	obj.Object["status"] = st
	r.writes.Add(1)
	if err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(r.fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s status: %w", r.kind, r.Key(), err)
	}
	return nil
}

func (r *appliedRecord) intent() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1beta1.GroupVersion.String(),
		"kind":       r.kind,
		"metadata":   map[string]any{"name": r.name, "namespace": r.pod.Namespace},
	}}
}

// Status reads the record's status back.
func (r *appliedRecord) Status(ctx context.Context) (*v1beta1.IMEXNodeStatus, error) {
	obj, status := r.read()
	if err := r.client.Get(ctx, r.Key(), obj); err != nil {
		return nil, err
	}
	st := status()
	return &st, nil
}
