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

package metering

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// APIEvents raises the meter's warnings as Kubernetes events on the plugin
// pods (in the meter's own namespace).
type APIEvents struct {
	recorder record.EventRecorder
}

// NewAPIEvents starts sending events; stop flushes and stops.
func NewAPIEvents(ctx context.Context, client kubernetes.Interface) (events *APIEvents, stop func()) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "compute-domain-metering"})
	return &APIEvents{recorder: rec}, b.Shutdown
}

// Warn implements Recorder.
func (e *APIEvents) Warn(_ context.Context, pod PodRef, reason, message string) {
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	e.recorder.Event(ref, corev1.EventTypeWarning, reason, message)
}
