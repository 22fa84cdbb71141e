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

package computedomain

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// FirstChannel is the lowest IMEX channel the allocator hands out. Channel 0 stays free for host-managed
// IMEX and for workloads that predate per-domain channels.
const FirstChannel int32 = 1

// DefaultMaxChannels is the number of IMEX channels current drivers create (channel0..channel2047).
const DefaultMaxChannels int32 = 2048

// ErrChannelsExhausted means every channel of a clique is held by another live domain.
var ErrChannelsExhausted = errors.New("no free IMEX channel")

// DomainRef identifies a domain to the allocator: by UID, and by name so that a domain that vanished
// without its finalizer running can still be released.
type DomainRef struct {
	UID  types.UID
	Name types.NamespacedName
}

// RefOf returns the allocator's reference to a domain.
func RefOf(cd *v1beta1.ComputeDomain) DomainRef {
	return DomainRef{UID: cd.UID, Name: types.NamespacedName{Namespace: cd.Namespace, Name: cd.Name}}
}

// ChannelAllocator gives each (domain, clique) one IMEX channel that no other live domain holds in that
// clique. It is the only allocator and keeps its state in memory; the domains' status.cliques[].channel
// persists it, and RebuildOnce restores it after a restart. Every method is serialized by one lock, so two
// concurrent reconciles never hand out the same channel.
type ChannelAllocator struct {
	mu          sync.Mutex
	maxChannels int32
	rebuilt     bool
	// holders maps clique → channel → holding domain.
	holders map[string]map[int32]types.UID
	// domains maps a domain to its channel per clique.
	domains map[types.UID]*domainChannels
}

type domainChannels struct {
	name     types.NamespacedName
	channels map[string]int32
}

// NewChannelAllocator returns an empty allocator for channels FirstChannel..maxChannels-1.
func NewChannelAllocator(maxChannels int32) *ChannelAllocator {
	return &ChannelAllocator{
		maxChannels: maxChannels,
		holders:     map[string]map[int32]types.UID{},
		domains:     map[types.UID]*domainChannels{},
	}
}

// Assign returns the domain's channel in the clique, allocating the lowest free one on first use.
func (a *ChannelAllocator) Assign(d DomainRef, clique string) (int32, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ch, ok := a.domainLocked(d).channels[clique]; ok {
		return ch, nil
	}
	held := a.holders[clique]
	for ch := FirstChannel; ch < a.maxChannels; ch++ {
		if _, taken := held[ch]; !taken {
			a.holdLocked(d, clique, ch)
			return ch, nil
		}
	}
	return 0, fmt.Errorf("clique %q: all %d channels are held by other domains: %w", clique, a.maxChannels-FirstChannel, ErrChannelsExhausted)
}

// Release frees every channel the domain holds.
func (a *ChannelAllocator) Release(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseLocked(uid)
}

// ReleaseExcept frees the domain's channel in every clique not in keep, and returns those cliques, sorted: a
// domain whose workload has left a clique gives that clique's channel back while it lives on elsewhere.
func (a *ChannelAllocator) ReleaseExcept(uid types.UID, keep map[string]bool) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	dc, ok := a.domains[uid]
	if !ok {
		return nil
	}
	var released []string
	for clique, ch := range dc.channels {
		if keep[clique] {
			continue
		}
		delete(a.holders[clique], ch)
		if len(a.holders[clique]) == 0 {
			delete(a.holders, clique)
		}
		delete(dc.channels, clique)
		released = append(released, clique)
	}
	sort.Strings(released)
	return released
}

// ReleaseNamed frees every channel held by the domain with that namespace/name, whatever its UID. The
// reconciler calls it when a domain is gone without its finalizer having run.
func (a *ChannelAllocator) ReleaseNamed(name types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uid, dc := range a.domains {
		if dc.name == name {
			a.releaseLocked(uid)
		}
	}
}

// Channels returns a copy of the domain's channel per clique.
func (a *ChannelAllocator) Channels(uid types.UID) map[string]int32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int32{}
	if dc, ok := a.domains[uid]; ok {
		for clique, ch := range dc.channels {
			out[clique] = ch
		}
	}
	return out
}

// RebuildOnce restores the allocator from the domains that list returns, the first time it is called;
// later calls do nothing. Domains are restored oldest first; when a corrupted or concurrent status lists
// a channel that an older domain already holds in that clique, the younger domain is not restored for
// that clique and gets a fresh channel on its next Assign. The returned errors describe those conflicts.
func (a *ChannelAllocator) RebuildOnce(list func() ([]v1beta1.ComputeDomain, error)) ([]error, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rebuilt {
		return nil, nil
	}
	domains, err := list()
	if err != nil {
		return nil, fmt.Errorf("list ComputeDomains to rebuild channel allocations: %w", err)
	}
	sort.Slice(domains, func(i, j int) bool {
		ti, tj := domains[i].CreationTimestamp, domains[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return domains[i].Namespace+"/"+domains[i].Name < domains[j].Namespace+"/"+domains[j].Name
	})
	var conflicts []error
	for i := range domains {
		cd := &domains[i]
		for _, c := range cd.Status.Cliques {
			if c.Channel == nil || c.CliqueID == "" {
				continue
			}
			ch := *c.Channel
			if ch < FirstChannel || ch >= a.maxChannels {
				conflicts = append(conflicts, fmt.Errorf("ComputeDomain %s/%s: clique %q lists channel %d outside %d..%d; allocating a new one",
					cd.Namespace, cd.Name, c.CliqueID, ch, FirstChannel, a.maxChannels-1))
				continue
			}
			if holder, taken := a.holders[c.CliqueID][ch]; taken && holder != cd.UID {
				conflicts = append(conflicts, fmt.Errorf("ComputeDomain %s/%s: clique %q lists channel %d, which an older domain holds; allocating a new one",
					cd.Namespace, cd.Name, c.CliqueID, ch))
				continue
			}
			a.holdLocked(RefOf(cd), c.CliqueID, ch)
		}
	}
	a.rebuilt = true
	return conflicts, nil
}

func (a *ChannelAllocator) domainLocked(d DomainRef) *domainChannels {
	dc, ok := a.domains[d.UID]
	if !ok {
		dc = &domainChannels{name: d.Name, channels: map[string]int32{}}
		a.domains[d.UID] = dc
	}
	return dc
}

func (a *ChannelAllocator) holdLocked(d DomainRef, clique string, ch int32) {
	dc := a.domainLocked(d)
	if old, ok := dc.channels[clique]; ok {
		delete(a.holders[clique], old)
	}
	dc.channels[clique] = ch
	if a.holders[clique] == nil {
		a.holders[clique] = map[int32]types.UID{}
	}
	a.holders[clique][ch] = d.UID
}

func (a *ChannelAllocator) releaseLocked(uid types.UID) {
	dc, ok := a.domains[uid]
	if !ok {
		return
	}
	for clique, ch := range dc.channels {
		delete(a.holders[clique], ch)
		if len(a.holders[clique]) == 0 {
			delete(a.holders, clique)
		}
	}
	delete(a.domains, uid)
}
