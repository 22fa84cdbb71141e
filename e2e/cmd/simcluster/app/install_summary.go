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
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// describeInstall says what the chart's install runs: the release's pods in
// the operator namespace by component, phase and image.
func describeInstall(ctx context.Context, client kubernetes.Interface) (string, error) {
	pods, err := client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/instance=" + simcluster.ReleaseName,
	})
	if err != nil {
		return "", fmt.Errorf("list the operator's pods: %w", err)
	}
	count := map[string]int{}
	images := map[string]bool{}
	for _, p := range pods.Items {
		name := p.Labels["app.kubernetes.io/name"]
		if c := p.Labels["app.kubernetes.io/component"]; c != "" {
			name += " (" + c + ")"
		}
		count[fmt.Sprintf("%s %s", name, p.Status.Phase)]++
		for _, c := range p.Spec.Containers {
			images[c.Image] = true
		}
	}
	var parts []string
	for k, n := range count {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(parts)
	var imageList []string
	for image := range images {
		imageList = append(imageList, image)
	}
	sort.Strings(imageList)
	return fmt.Sprintf("operator installed by `helm install %s %s -n %s` (Helm SDK): pods %s, our binaries run from image %s",
		simcluster.ReleaseName, simcluster.ChartPath, simcluster.OperatorNamespace, strings.Join(parts, ", "), strings.Join(imageList, ", ")), nil
}
