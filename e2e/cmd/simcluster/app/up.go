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
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/computedomain-operator/computedomain-operator/e2e/cmd/internal/clustercli"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"

	cdv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

func runUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("simcluster up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf clustercli.Flags
	cf.Register(fs, 2, cdv1beta1.NVL72CliqueSize, "")
	kubeconfig := fs.String("kubeconfig", "", "write the cluster's admin kubeconfig to this file (required)")
	exitWhenReady := fs.Bool("exit-when-ready", false, "shut down as soon as the cluster is ready (for startup benchmarks)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the startup (until ready) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return errors.New("--kubeconfig is required: the file to write the cluster's kubeconfig to")
	}
	cfg, err := cf.Config()
	if err != nil {
		return err
	}
	ctx = clustercli.WithLogger(ctx, cf.Logger(stderr))
	start := time.Now()
	stopProfile, err := clustercli.StartCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	cluster, err := simcluster.Start(ctx, cfg)
	stopProfile()
	if err != nil {
		return fmt.Errorf("start cluster: %w", err)
	}
	defer clustercli.StopQuietly(cluster)
	if err := simcluster.WriteKubeconfig(simcluster.UserConfig(cluster.RESTConfig()), *kubeconfig); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stdout, "simcluster ready in %.1fs: %d nodes (%s), %s; kubeconfig written to %s; Ctrl-C to stop\n",
		time.Since(start).Seconds(), len(cluster.Nodes()), clustercli.DescribeNodes(cluster.Nodes()), clustercli.Footprint(len(cluster.Nodes())), *kubeconfig)
	install, err := describeInstall(ctx, cluster.Client())
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stdout, "%s; see them with: kubectl --kubeconfig %s get pods -n %s\n", install, *kubeconfig, simcluster.OperatorNamespace)
	if !*exitWhenReady {
		<-ctx.Done()
	}
	_, _ = fmt.Fprintln(stderr, "simcluster: shutting down")
	return nil
}
