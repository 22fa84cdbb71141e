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

// Package app is the kubectl computedomain plugin: its commands, flags and the client it reads the cluster with.
package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
	"github.com/computedomain-operator/computedomain-operator/internal/topologyview"
)

// Streams are where the plugin prints.
type Streams struct {
	Out, ErrOut io.Writer
}

// NewReader makes the client the commands read with, from the kubeconfig the flags name.
type NewReader func(clientcmd.ClientConfig) (client.Reader, error)

// options are the flags every command shares.
type options struct {
	kubeconfig, context, namespace, output string
	newReader                              NewReader
	// clientConfig is the kubeconfig the flags name, made once the flags are parsed.
	clientConfig clientcmd.ClientConfig
}

// NewCommand is the plugin's root command. newReader nil reads the cluster with a controller-runtime client.
func NewCommand(streams Streams, newReader NewReader) *cobra.Command {
	if newReader == nil {
		newReader = newClient
	}
	o := &options{newReader: newReader}
	root := &cobra.Command{
		Use:   "kubectl-computedomain",
		Short: "See the NVLink racks, their trays and ComputeDomains",
		Long: "kubectl computedomain shows the cluster's NVLink cliques (racks) and trays (nodes): which are free, which " +
			"ComputeDomain or pod holds the others, which cannot take work; and one ComputeDomain with its cliques, " +
			"channels, nodes, pods, conditions, events and what blocks it. It only reads the Kubernetes API.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl computedomain",
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = o.kubeconfig
			o.clientConfig = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
				&clientcmd.ConfigOverrides{CurrentContext: o.context, Context: clientcmdapi.Context{Namespace: o.namespace}})
			return nil
		},
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	pf := root.PersistentFlags()
	pf.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	pf.StringVar(&o.context, "context", "", "the kubeconfig context to use")
	pf.StringVarP(&o.namespace, "namespace", "n", "", "the namespace (describe: the domain's; racks: only cliques where this namespace holds trays)")
	pf.StringVarP(&o.output, "output", "o", "", "output format: text (default), json, yaml; racks also svg")
	root.AddCommand(newRacksCommand(o, streams), newDescribeCommand(o, streams))
	return root
}

// namespaceOrDefault is the namespace of -n, else the kubeconfig context's, else "default".
func (o *options) namespaceOrDefault() (string, error) {
	ns, _, err := o.clientConfig.Namespace()
	if err != nil {
		return "", fmt.Errorf("the kubeconfig's namespace: %w", err)
	}
	return ns, nil
}

// snapshot lists the cluster's objects.
func (o *options) snapshot(ctx context.Context, fetch topologyview.FetchOptions) (*topologyview.Snapshot, error) {
	r, err := o.newReader(o.clientConfig)
	if err != nil {
		return nil, err
	}
	return topologyview.Fetch(ctx, r, fetch)
}

// newClient is a controller-runtime client of the kubeconfig, with our kinds in its scheme.
func newClient(cfg clientcmd.ClientConfig) (client.Reader, error) {
	rest, err := cfg.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig (--kubeconfig, --context): %w", err)
	}
	scheme, err := kubescheme.New()
	if err != nil {
		return nil, err
	}
	c, err := client.New(rest, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", rest.Host, err)
	}
	return c, nil
}

// racksOptions are the racks command's own flags.
type racksOptions struct {
	domain, clique string
	watch          bool
	interval       time.Duration
}

func newRacksCommand(o *options, streams Streams) *cobra.Command {
	ro := &racksOptions{}
	cmd := &cobra.Command{
		Use:   "racks",
		Short: "One row per NVLink clique, one cell per tray: free, or who holds it, and what keeps it from work",
		Example: "  kubectl computedomain racks\n" +
			"  kubectl computedomain racks --domain train -n team-a\n" +
			"  kubectl computedomain racks -o svg > racks.svg",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := topologyview.ParseFormat(o.output, topologyview.RacksFormats)
			if err != nil {
				return err
			}
			if ro.watch && format != topologyview.FormatText {
				return fmt.Errorf("--watch redraws the text view; drop -o %s", o.output)
			}
			if ro.interval <= 0 {
				return fmt.Errorf("--interval %s: must be positive", ro.interval)
			}
			opts := topologyview.RacksOptions{Clique: ro.clique}
			if ro.domain != "" || cmd.Flags().Changed("namespace") {
				ns, err := o.namespaceOrDefault()
				if err != nil {
					return err
				}
				if ro.domain != "" {
					opts.Domain, opts.DomainNamespace = ro.domain, ns
				} else {
					opts.Namespace = ns
				}
			}
			render := func(ctx context.Context) ([]byte, error) {
				s, err := o.snapshot(ctx, topologyview.FetchOptions{})
				if err != nil {
					return nil, err
				}
				r, err := topologyview.BuildRacks(s, opts)
				if err != nil {
					return nil, err
				}
				var b bytes.Buffer
				err = topologyview.WriteRacks(&b, r, format)
				return b.Bytes(), err
			}
			if !ro.watch {
				out, err := render(cmd.Context())
				if err != nil {
					return err
				}
				_, err = streams.Out.Write(out)
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return watch(ctx, streams.Out, ro.interval, render)
		},
	}
	f := cmd.Flags()
	f.StringVar(&ro.domain, "domain", "", "only the cliques where this ComputeDomain (in the -n namespace) holds trays")
	f.StringVar(&ro.clique, "clique", "", "only this clique (the value of the node label nvidia.com/gpu.clique)")
	f.BoolVarP(&ro.watch, "watch", "w", false, "list the cluster again every --interval and redraw when the picture changes (text only)")
	f.DurationVar(&ro.interval, "interval", 2*time.Second, "how often --watch lists the cluster")
	return cmd
}

// clearScreen moves the cursor home and clears the terminal before a redraw.
const clearScreen = "\x1b[H\x1b[2J"

// watch renders every interval and prints the picture when it changed, until ctx ends.
func watch(ctx context.Context, out io.Writer, interval time.Duration, render func(context.Context) ([]byte, error)) error {
	var last []byte
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		pic, err := render(ctx)
		switch {
		case errors.Is(err, context.Canceled) || ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		case !bytes.Equal(pic, last):
			if _, err := fmt.Fprintf(out, "%s%s\n%s", clearScreen, time.Now().Format(time.RFC3339), pic); err != nil {
				return err
			}
			last = pic
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func newDescribeCommand(o *options, streams Streams) *cobra.Command {
	return &cobra.Command{
		Use:     "describe DOMAIN",
		Short:   "A ComputeDomain's cliques, slices, channels, nodes, pods, conditions, events and what blocks it",
		Example: "  kubectl computedomain describe train -n team-a",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("describe takes one argument, DOMAIN (a ComputeDomain's name; its namespace with -n), got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := topologyview.ParseFormat(o.output, topologyview.DescribeFormats)
			if err != nil {
				return err
			}
			ns, err := o.namespaceOrDefault()
			if err != nil {
				return err
			}
			s, err := o.snapshot(cmd.Context(), topologyview.FetchOptions{EventsNamespace: ns})
			if err != nil {
				return err
			}
			d, err := topologyview.Describe(s, ns, args[0])
			if err != nil {
				return err
			}
			return topologyview.WriteDescription(streams.Out, d, format)
		},
	}
}
