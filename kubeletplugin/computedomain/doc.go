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

// Package computedomain is the compute-domain.nvidia.com kubelet plugin: it
// publishes IMEX channel slots and daemon slots, and prepares two kinds of
// claims (see docs/design/computedomains.md):
//
//   - workload claims (a channel-<i> slot with a ComputeDomainChannelConfig):
//     the claim's namespace must be the domain's; on a node without a
//     multi-node fabric the claim succeeds with nothing injected; otherwise the
//     call waits (up to Config.ReadyWait, 30 s, without the state's lock)
//     until the domain's status lists this node Ready with a channel for its
//     clique (the node's long-lived IMEX daemon is ready and its clique's
//     ensemble lists it), woken by the domain informer (domain_lookup.go),
//     then injects /dev/nvidia-caps-imex-channels/channel<N> (N is the
//     domain's channel in the clique, never the slot's number; every channel
//     for allocationMode All) through a per-claim CDI spec. The kubelet
//     retries a failed prepare only at its next pod sync, 60-90 s later, so a
//     pod of a forming domain is prepared by its first call; after the wait a
//     retryable error says what the domain's status shows instead
//     (node_place.go);
//   - daemon claims (a daemon-<i> slot with a ComputeDomainDaemonConfig), for
//     manifests written for NVIDIA's driver, whose controller runs a daemon pod
//     per domain (ours makes none): the container gets the domain's identity,
//     the node's clique and a per-domain config directory (package
//     internal/computedomain/identity).
//
// The node's state (state.go) owns the checkpoint under one lock and is what
// prepares, unprepares and cleans up stale claims; it is safe for concurrent
// calls, so the kubelet helper runs the plugin without serializing them
// (draplugin.Options.Concurrent) and one claim's wait holds up no other claim
// of the node. The Driver (driver.go) only adapts the kubelet helper's calls
// to the state and publishes the pool.
//
// Every prepare is checkpointed (started before any side effect, completed
// after), and unprepare works from the checkpoint alone: it never needs the
// domain, so a deleted domain cannot leave pods stuck. The plugin never writes
// to the API: it reads ComputeDomains from caches of one namespace each, kept
// only while prepares there use them (WatchedDomains), and publishes its slices
// through the kubelet helper.
package computedomain
