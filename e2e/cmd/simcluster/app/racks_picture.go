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
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/computedomain-operator/computedomain-operator/internal/kubescheme"
	"github.com/computedomain-operator/computedomain-operator/internal/topologyview"
)

// racksPicture is the racks view of the cluster at one moment of the demo, as kubectl computedomain racks draws it.
type racksPicture struct {
	when      string
	text, svg bytes.Buffer
}

// captureRacks keeps the racks view of the cluster now, described by when, for the end of the demo.
func (d *demo) captureRacks(ctx context.Context, when string) error {
	scheme, err := kubescheme.New()
	if err != nil {
		return err
	}
	// Our kinds have no protobuf encoding.
	cfg := rest.CopyConfig(d.restConfig)
	cfg.ContentType = runtime.ContentTypeJSON
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("racks picture: %w", err)
	}
	snap, err := topologyview.Fetch(ctx, c, topologyview.FetchOptions{})
	if err != nil {
		return fmt.Errorf("racks picture: %w", err)
	}
	r, err := topologyview.BuildRacks(snap, topologyview.RacksOptions{})
	if err != nil {
		return fmt.Errorf("racks picture: %w", err)
	}
	p := &racksPicture{when: when}
	if err := topologyview.WriteRacks(&p.text, r, topologyview.FormatText); err != nil {
		return err
	}
	if err := topologyview.WriteRacks(&p.svg, r, topologyview.FormatSVG); err != nil {
		return err
	}
	d.racks = p
	return nil
}

// printRacks ends the demo with the racks picture it captured: the text in the terminal, the SVG in
// d.racksSVG (relative to the repository root).
func (d *demo) printRacks() error {
	if d.racks == nil {
		return nil
	}
	_, _ = fmt.Fprintf(d.out, "The racks %s (kubectl computedomain racks):\n\n%s\n", d.racks.when, d.racks.text.String())
	if d.racksSVG == "" {
		return nil
	}
	path := d.racksSVG
	if !filepath.IsAbs(path) {
		path = filepath.Join(d.root, path)
	}
	if err := os.WriteFile(path, d.racks.svg.Bytes(), 0o644); err != nil {
		return fmt.Errorf("-racks-svg %s: %w", d.racksSVG, err)
	}
	d.progress("the racks picture (kubectl computedomain racks -o svg): %s", path)
	return nil
}
