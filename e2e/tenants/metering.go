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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	meteringapp "github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-metering/app"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/metering"
)

// MeteringDeployment is the chart's metering Deployment.
const MeteringDeployment = "compute-domain-metering"

// MeteringPodSelector selects the chart's metering pod.
const MeteringPodSelector = "app.kubernetes.io/name=compute-domain-metering"

// meteringPort is the chart's default metering.port.
const meteringPort = "8080"

// ChartValues are the chart values that turn the metering component (pulling every pullInterval, billing the
// classes of billingUnits in their unit) and the sharing policy on.
func ChartValues(pullInterval time.Duration, billingUnits map[string]metering.Unit) map[string]any {
	units := map[string]any{}
	for class, u := range billingUnits {
		units[class] = string(u)
	}
	m := map[string]any{"enabled": true, "pullInterval": pullInterval.String()}
	if len(units) > 0 {
		m["billingUnits"] = units
	}
	return map[string]any{"sharingPolicy": map[string]any{"enabled": true}, "metering": m}
}

// OffValues turn the metering component and the sharing policy off again.
func OffValues() map[string]any {
	return map[string]any{"sharingPolicy": map[string]any{"enabled": false}, "metering": map[string]any{"enabled": false}}
}

// MeteringURL is the URL of a Running metering pod other than the one named except, or "" when there is none.
func MeteringURL(ctx context.Context, client kubernetes.Interface, except string) (string, error) {
	pods, err := client.CoreV1().Pods(simcluster.OperatorNamespace).List(ctx, metav1.ListOptions{LabelSelector: MeteringPodSelector})
	if err != nil {
		return "", fmt.Errorf("list metering pods: %w", err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Status.PodIP != "" && p.Name != except {
			return "http://" + net.JoinHostPort(p.Status.PodIP, meteringPort), nil
		}
	}
	return "", nil
}

// Report asks the metering component at server for the report of [from, to), as `compute-domain-metering
// report --format json` does.
func Report(ctx context.Context, server string, from, to time.Time) (metering.Report, error) {
	var out bytes.Buffer
	err := meteringapp.Report(ctx, []string{"--server=" + server, "--from=" + from.UTC().Format(time.RFC3339Nano), "--to=" + to.UTC().Format(time.RFC3339Nano), "--format=json"}, &out)
	if err != nil {
		return metering.Report{}, err
	}
	var r metering.Report
	return r, json.Unmarshal(out.Bytes(), &r)
}

// Billed is a team's bill in unit in the report (0 when the team has none).
func Billed(r metering.Report, team string, unit metering.Unit) float64 {
	for _, t := range r.Teams {
		if t.Team == team {
			return t.Billed[unit]
		}
	}
	return 0
}

// OpenIntervals counts the report's intervals still open.
func OpenIntervals(r metering.Report) int {
	n := 0
	for _, iv := range r.Intervals {
		if iv.Open {
			n++
		}
	}
	return n
}
