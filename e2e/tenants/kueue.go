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

package tenants

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Kueue's kinds the stories read.
var (
	Workloads     = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}
	ClusterQueues = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
)

// JobWorkload is the Kueue Workload of a Job (Kueue labels it with the Job's UID), with the Job.
func JobWorkload(ctx context.Context, client kubernetes.Interface, dyn dynamic.Interface, ns, jobName string) (*unstructured.Unstructured, *batchv1.Job, error) {
	j, err := client.BatchV1().Jobs(ns).Get(ctx, jobName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	list, err := dyn.Resource(Workloads).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "kueue.x-k8s.io/job-uid=" + string(j.UID)})
	if err != nil {
		return nil, j, err
	}
	if len(list.Items) != 1 {
		return nil, j, fmt.Errorf("job %s/%s has %d Workloads, want 1", ns, jobName, len(list.Items))
	}
	return &list.Items[0], j, nil
}

// Condition is a Workload's condition of type t (nil when it has none).
func Condition(wl *unstructured.Unstructured, t string) *metav1.Condition {
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != t {
			continue
		}
		out := &metav1.Condition{Type: t}
		out.Status = metav1.ConditionStatus(fmt.Sprint(m["status"]))
		out.Reason, _ = m["reason"].(string)
		out.Message, _ = m["message"].(string)
		return out
	}
	return nil
}

// IsTrue says whether a condition is there and True.
func IsTrue(c *metav1.Condition) bool { return c != nil && c.Status == metav1.ConditionTrue }

// QueueUsage is a ClusterQueue's flavorsUsage of one resource (total, borrowed) as Kueue reports it.
func QueueUsage(ctx context.Context, dyn dynamic.Interface, cq, res string) (total, borrowed int64, err error) {
	obj, err := dyn.Resource(ClusterQueues).Get(ctx, cq, metav1.GetOptions{})
	if err != nil {
		return 0, 0, err
	}
	flavors, _, _ := unstructured.NestedSlice(obj.Object, "status", "flavorsUsage")
	for _, f := range flavors {
		fm, _ := f.(map[string]any)
		resources, _ := fm["resources"].([]any)
		for _, r := range resources {
			rm, _ := r.(map[string]any)
			if rm["name"] != res {
				continue
			}
			if total, err = Quantity(rm["total"]); err != nil {
				return 0, 0, err
			}
			borrowed, err = Quantity(rm["borrowed"])
			return total, borrowed, err
		}
	}
	return 0, 0, nil
}

// Quantity is the value of a resource quantity in an unstructured object (0 when absent).
func Quantity(v any) (int64, error) {
	if v == nil {
		return 0, nil
	}
	q, err := resource.ParseQuantity(fmt.Sprint(v))
	if err != nil {
		return 0, fmt.Errorf("quantity %v: %w", v, err)
	}
	return q.Value(), nil
}
