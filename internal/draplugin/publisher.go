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
	"sync"

	"k8s.io/dynamic-resource-allocation/resourceslice"
)

// PublishFunc publishes a pool: the kubelet helper's PublishResources.
type PublishFunc func(context.Context, resourceslice.DriverResources) error

// Publisher holds a plugin's PublishFunc, which the plugin only gets once
// the kubelet helper runs, and serializes publishing so that an older pool
// never overtakes a newer one. The zero value publishes nothing until Set.
type Publisher struct {
	mu      sync.Mutex
	publish PublishFunc
}

// Set sets the function and publishes resources() once.
func (p *Publisher) Set(ctx context.Context, publish PublishFunc, resources func() resourceslice.DriverResources) error {
	p.mu.Lock()
	p.publish = publish
	p.mu.Unlock()
	return p.Publish(ctx, resources)
}

// Publish publishes resources(), read while holding the publishing lock, with
// the function Set; before Set it does nothing.
func (p *Publisher) Publish(ctx context.Context, resources func() resourceslice.DriverResources) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.publish == nil {
		return nil
	}
	return p.publish(ctx, resources())
}
