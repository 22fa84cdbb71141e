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

package gpu

import (
	"context"

	"k8s.io/dynamic-resource-allocation/resourceslice"
)

// Resources is the pool to publish now, with health taints.
func (d *Driver) Resources() resourceslice.DriverResources {
	inv, claims := d.state.snapshot()
	return BuildResources(inv, PublishOptions{
		PoolName: d.poolName(), PartitionableMIG: d.cfg.PartitionableMIG, Shares: d.cfg.Shares, Passthrough: d.cfg.passthrough(),
		Taints: d.health.taints(inv, createdMigInstances(claims)),
	})
}

// SetPublisher sets the function that publishes the pool (the kubeletplugin
// helper's PublishResources) and publishes once.
func (d *Driver) SetPublisher(ctx context.Context, publish func(context.Context, resourceslice.DriverResources) error) error {
	return d.pub.Set(ctx, publish, d.Resources)
}

// Publish sends the current pool to the publisher, if any.
func (d *Driver) Publish(ctx context.Context) error {
	return d.pub.Publish(ctx, d.Resources)
}
