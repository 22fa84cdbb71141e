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

package draplugin

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

// Driver is a kubelet plugin that publishes its devices through a publisher
// it is handed once the kubelet helper runs.
type Driver interface {
	kubeletplugin.DRAPlugin
	SetPublisher(ctx context.Context, publish func(context.Context, resourceslice.DriverResources) error) error
}

// Serve starts what every plugin runs next to its driver: the metrics
// endpoint on metricsAddress (empty: none) serving reg and, at ReadyPath,
// whether the kubelet has registered the plugin (the pod's readiness), the
// kubelet registration and gRPC API, and the driver's publishing. The
// caller stops the returned helper.
func Serve(ctx context.Context, driver Driver, o Options, metricsAddress string, reg *prometheus.Registry, routes ...Route) (*kubeletplugin.Helper, error) {
	if o.Registration == nil {
		o.Registration = &Registration{}
	}
	if metricsAddress != "" {
		routes = append(routes, Route{Path: ReadyPath, Handler: o.Registration})
		addr, err := ServeMetrics(ctx, metricsAddress, reg, routes...)
		if err != nil {
			return nil, fmt.Errorf("--metrics-address: %w", err)
		}
		klog.FromContext(ctx).Info("Serving metrics", "address", addr.String())
	}
	helper, err := Start(ctx, driver, o)
	if err != nil {
		return nil, err
	}
	if err := driver.SetPublisher(ctx, helper.PublishResources); err != nil {
		helper.Stop()
		return nil, fmt.Errorf("publish resources: %w", err)
	}
	return helper, nil
}
