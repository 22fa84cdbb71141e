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

package app

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster/nodeagent"
)

var computeDomains = schema.GroupVersionResource{Group: "resource.nvidia.com", Version: "v1beta1", Resource: "computedomains"}

// computeDomainJob: an NVIDIA-style ComputeDomain + Job of 4 pods; every pod
// gets the domain's IMEX channel, the domain becomes Ready with 4 nodes served by
// the nodes' long-lived IMEX daemons, and the Job completes.
func (d *demo) computeDomainJob(ctx context.Context) error {
	if _, err := d.client.Discovery().ServerResourcesForGroupVersion("resource.nvidia.com/v1beta1"); err != nil {
		d.progress("ComputeDomain job: skipped, ComputeDomains are not installed (--compute-domains=false)")
		return nil
	}
	dyn, err := dynamic.NewForConfig(d.restConfig)
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := d.applier.CreateFromFile(ctx, demoNamespace, filepath.Join(d.root, "demo/computedomain-job.yaml")); err != nil {
		return fmt.Errorf("ComputeDomain job: %w", err)
	}
	var cd *unstructured.Unstructured
	var pods []corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, d.timeout, true, func(ctx context.Context) (bool, error) {
		cd, err = dyn.Resource(computeDomains).Namespace(demoNamespace).Get(ctx, "imex-domain", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		list, err := d.client.CoreV1().Pods(demoNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=nccl-job"})
		if err != nil {
			return false, nil
		}
		pods = list.Items
		started := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded {
				started++
			}
		}
		status, _, _ := unstructured.NestedString(cd.Object, "status", "status")
		return started == 4 && status == "Ready", nil
	})
	if err != nil {
		var states []string
		for i := range pods {
			states = append(states, pods[i].Name+": "+podSummary(&pods[i]))
		}
		var status any
		if cd != nil {
			status = cd.Object["status"]
		}
		return fmt.Errorf("ComputeDomain job: 4 pods not running in a Ready domain within %s (domain status %v; %s): %w",
			d.timeout, status, strings.Join(states, "; "), err)
	}
	took := time.Since(start)
	channels := map[string]bool{}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	for _, p := range pods {
		edits, err := nodeagent.DecodeCDIEdits(p.Annotations)
		if err != nil {
			return fmt.Errorf("ComputeDomain job: pod %s: %w", p.Name, err)
		}
		var chans []string
		for _, n := range edits["ctr"].DeviceNodes {
			if strings.HasPrefix(n.Path, "/dev/nvidia-caps-imex-channels/") {
				chans = append(chans, filepath.Base(n.Path))
			}
		}
		if len(chans) != 1 {
			return fmt.Errorf("ComputeDomain job: pod %s got IMEX channels %v, want one", p.Name, chans)
		}
		channels[chans[0]] = true
		d.rows = append(d.rows, demoRow{"ComputeDomain job", p.Name, p.Spec.NodeName, "4 gpu + " + chans[0], string(p.Status.Phase), took})
	}
	if len(channels) != 1 {
		return fmt.Errorf("ComputeDomain job: pods got different channels %v, want the domain's one", channels)
	}
	nodes, _, _ := unstructured.NestedSlice(cd.Object, "status", "nodes")
	var described []string
	for _, n := range nodes {
		m, _ := n.(map[string]any)
		index, _, _ := unstructured.NestedInt64(m, "index") // omitted when 0
		described = append(described, fmt.Sprintf("%v(%v #%d)", m["name"], m["ipAddress"], index))
	}
	d.progress("ComputeDomain job: domain Ready with %d nodes %s, all 4 pods got %s, %.2fs after creation",
		len(nodes), strings.Join(described, " "), keys(channels), took.Seconds())
	if err := d.captureRacks(ctx, "while the ComputeDomain job ran"); err != nil {
		return fmt.Errorf("ComputeDomain job: %w", err)
	}

	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, d.timeout, true, func(ctx context.Context) (bool, error) {
		job, err := d.client.BatchV1().Jobs(demoNamespace).Get(ctx, "nccl-job", metav1.GetOptions{})
		return err == nil && job.Status.Succeeded >= 4, nil
	})
	if err != nil {
		return fmt.Errorf("ComputeDomain job: job not complete within %s: %w", d.timeout, err)
	}
	d.progress("ComputeDomain job: job complete, %.2fs after creation", time.Since(start).Seconds())
	return nil
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
