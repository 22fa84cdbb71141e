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
