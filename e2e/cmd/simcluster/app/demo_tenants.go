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
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/computedomain-operator/computedomain-operator/e2e/cmd/internal/clustercli"
	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
	"github.com/computedomain-operator/computedomain-operator/e2e/tenants"
)

// runDemoTenants runs issue 15's multi-tenant story (e2e/tenants, the story the e2e/kueue suite runs) on a fresh
// simulated cluster with Kueue (bin/kueue): it prints each step and the bill next to the measured allocations.
func runDemoTenants(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simcluster demo-tenants", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clustercli.Flags
	// One rack of 4 GB200 trays: 16 GPUs for team-a's 8 and team-b's 4.
	cf.Register(fs, 1, 4, "")
	for name, value := range map[string]string{"compute-domains": "false", "job-run-duration": "10m"} {
		if err := fs.Set(name, value); err != nil {
			return err
		}
	}
	kueueBinary := fs.String("kueue", "", "the kueue binary, built from "+simcluster.KueueModule+"@"+simcluster.KueueVersion+" (default <repo>/bin/kueue: make kueue)")
	pull := fs.Duration("pull-interval", time.Second, "the metering component's pull interval (metering.pullInterval)")
	hold := fs.Duration("hold", 2*time.Second, "how long the jobs hold their GPUs between steps")
	timeout := fs.Duration("step-timeout", 2*time.Minute, "how long one wait of the story may take")
	ctx, d, err := startDemo(ctx, fs, &cf, args, stdout, stderr)
	if err != nil {
		return err
	}
	defer clustercli.StopQuietly(d.cluster)
	dyn, err := dynamic.NewForConfig(d.restConfig)
	if err != nil {
		return err
	}

	config := filepath.Join(d.root, "demo/kueue/controller-config.yaml")
	d.progress("starting Kueue %s with %s (DRA quota on)", simcluster.KueueVersion, strings.TrimPrefix(config, d.root+"/"))
	kueue, err := simcluster.StartKueue(ctx, d.cluster, simcluster.KueueConfig{Binary: *kueueBinary, ConfigFile: config})
	if err != nil {
		return fmt.Errorf("start Kueue (make kueue builds bin/kueue): %w", err)
	}
	defer kueue.Stop()
	teams, err := tenants.DecodeFixture(d.root, "demo/kueue/teams.yaml")
	if err != nil {
		return err
	}
	if _, err := d.applier.Create(ctx, "", teams); err != nil {
		return fmt.Errorf("apply demo/kueue/teams.yaml: %w", err)
	}
	d.progress("demo/kueue/teams.yaml: namespaces team-a (team=a) and team-b (team=b), ClusterQueues of 4 %s each in the cohort gpu-platform, team-a may borrow 4", tenants.GPUResource)

	story := &tenants.Story{
		Cluster: d.cluster, Client: d.client, Dynamic: dyn, Applier: d.applier, RepoRoot: d.root,
		PullInterval: *pull, Hold: *hold, Timeout: *timeout,
		Step: func(msg string) { d.progress("%s", msg) },
	}
	res, err := story.Run(ctx)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stdout, "\nbill of [%s, %s), %s in device-seconds (one pull interval: %s)\n", res.From.UTC().Format(time.RFC3339), res.To.UTC().Format(time.RFC3339), tenants.GPUClass, *pull)
	if err := res.WriteBill(stdout); err != nil {
		return err
	}
	_, _ = fmt.Fprintln(stdout)
	if err := res.Check(*pull); err != nil {
		return fmt.Errorf("the bill does not match the measured allocations: %w", err)
	}
	d.progress("the bill matches the measured allocations within one pull interval (%s), per job and per team", *pull)
	d.progress("demo-tenants finished successfully")
	return nil
}
