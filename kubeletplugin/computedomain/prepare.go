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
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
	"github.com/computedomain-operator/computedomain-operator/internal/cdi"
	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
	"github.com/computedomain-operator/computedomain-operator/internal/computedomain/identity"
	"github.com/computedomain-operator/computedomain-operator/internal/draplugin"
)

// Prepare prepares one claim and observes it in the metrics. The state's
// lock is held while the claim is prepared, never while it waits. A channel
// claim whose node has no place in its domain yet (the domain's status does
// not list this node Ready with a channel for its clique) waits inside the
// call, up to ReadyWait, and is prepared as soon as the domain's next status
// write reaches the cache: the kubelet retries a failed prepare only at its
// next pod sync, 60-90 s later, so a pod of a healthy forming domain must be
// prepared by its first call. Other claims of the node are prepared
// meanwhile (the helper does not serialize this plugin's calls). After
// ReadyWait the answer is a retryable error that says what the claim waited
// for and what the domain's status shows instead.
func (s *nodeState) Prepare(ctx context.Context, claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	start := s.clock.Now()
	// The domains the claim's domain is looked up among stay watched for the
	// whole call (a waiting claim wakes on their changes), and their first
	// list is made here, before the state's lock is taken, so that it holds
	// up no other claim of the node.
	release, err := s.domains.Hold(ctx, s.domainNamespace(claim))
	if err != nil {
		err = fmt.Errorf("prepare claim %s: %w: %w", klog.KObj(claim), ErrWaitingForDomain, err)
		s.metrics.observePrepare("", s.clock.Since(start), err)
		return kubeletplugin.PrepareResult{Err: err}
	}
	defer release()
	devices, kind, err := s.prepareLocked(ctx, claim)
	if pending, ok := errors.AsType[*channelPendingError](err); ok {
		devices, kind, err = s.waitAndPrepare(ctx, claim, pending.domainUID, start)
	}
	s.metrics.observePrepare(kind, s.clock.Since(start), err)
	return kubeletplugin.PrepareResult{Devices: devices, Err: err}
}

// waitAndPrepare prepares a channel claim again each time its domain changes
// in the cache or the node releases a claim (which may free the channel),
// until it is prepared, fails otherwise, ReadyWait has passed since start or
// the call ends. It holds no lock while it waits.
func (s *nodeState) waitAndPrepare(ctx context.Context, claim *resourceapi.ResourceClaim, domainUID types.UID, start time.Time) ([]kubeletplugin.Device, string, error) {
	timer := s.clock.NewTimer(start.Add(s.cfg.ReadyWait).Sub(s.clock.Now()))
	defer timer.Stop()
	klog.FromContext(ctx).V(2).Info("Channel claim waits for its node's place in the domain", "claim", klog.KObj(claim), "domainUID", domainUID, "readyWait", s.cfg.ReadyWait)
	for {
		// Subscribe before looking, so that no change is missed.
		domainChanged, released := s.domains.Changed(domainUID), s.releasedChannel()
		devices, kind, err := s.prepareLocked(ctx, claim)
		pending, ok := errors.AsType[*channelPendingError](err)
		if !ok {
			return devices, kind, err
		}
		select {
		case <-domainChanged:
		case <-released:
		case <-timer.C():
			devices, kind, err = s.prepareLocked(ctx, claim) // a change that raced the deadline
			if pending, ok := errors.AsType[*channelPendingError](err); ok {
				pending.waited = s.cfg.ReadyWait
				return nil, kind, pending
			}
			return devices, kind, err
		case <-ctx.Done():
			pending.waited = s.clock.Since(start)
			pending.ended = context.Cause(ctx)
			return nil, kind, pending
		}
	}
}

// prepareLocked prepares one claim under the state's lock, without waiting,
// and says which kind of claim it was.
func (s *nodeState) prepareLocked(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	devices, err := s.prepareClaim(ctx, claim)
	kind := ""
	if data, ok := claimData(s.ledger.Claims()[string(claim.UID)].Devices); ok {
		kind = data.Kind
	}
	return devices, kind, err
}

// domainNamespace is where the claim's domain is looked up: a channel claim
// is served only by a domain of its own namespace; a daemon claim (made in the
// operator's namespace) names a domain of any (""). The kind is that of the
// claim's first device of this driver; planClaim refuses a claim whose
// devices differ in kind.
func (s *nodeState) domainNamespace(claim *resourceapi.ResourceClaim) string {
	if claim.Status.Allocation != nil {
		for _, r := range claim.Status.Allocation.Devices.Results {
			if r.Driver != s.cfg.DriverName {
				continue
			}
			if kind, err := deviceKind(r.Device, s.cfg.ChannelSlots, s.cfg.DaemonSlots); err == nil && kind == apiv1beta1.DeviceTypeDaemon {
				return ""
			}
			break
		}
	}
	return claim.Namespace
}

// channelPendingError is a channel claim's retryable error while its node has
// no place in its domain: what it waits for and what it finds instead.
type channelPendingError struct {
	claim     klog.ObjectRef
	domainUID types.UID
	// waitingFor is what the claim needs, cause what the node sees instead.
	waitingFor, cause string
	// waited is how long the call waited; ended, when set, why it stopped
	// before ReadyWait (the kubelet's call ended).
	waited time.Duration
	ended  error
}

func (e *channelPendingError) Error() string {
	waited := fmt.Sprintf("waited %s", e.waited)
	if e.ended != nil {
		waited = fmt.Sprintf("the call ended (%v) after %s", e.ended, e.waited.Round(time.Millisecond))
	}
	return fmt.Sprintf("prepare claim %s: %v: %s for %s: %s; the kubelet retries", e.claim, ErrWaitingForDomain, waited, e.waitingFor, e.cause)
}

func (e *channelPendingError) Unwrap() error { return ErrWaitingForDomain }

func (s *nodeState) prepareClaim(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, error) {
	logger := klog.FromContext(ctx).WithValues("claim", klog.KObj(claim), "claimUID", claim.UID)
	ctx = klog.NewContext(ctx, logger)
	uid := string(claim.UID)
	if prev, ok := s.ledger.Claims()[uid]; ok && prev.Status == checkpoint.PrepareCompleted {
		logger.V(2).Info("Claim already prepared, returning the stored result")
		return draplugin.PreparedDevices(prev), nil
	}
	// A claim left in PrepareStarted (an earlier call that waited, or a
	// crash) is prepared again from the top: every step is idempotent.
	plan, err := s.planClaim(claim)
	if err != nil {
		return nil, fmt.Errorf("prepare claim %s: %w", klog.KObj(claim), err)
	}
	namespace := s.domainNamespace(claim)
	domain, err := s.domains.DomainByUID(ctx, namespace, plan.domainUID)
	if err != nil {
		return nil, fmt.Errorf("prepare claim %s: %w", klog.KObj(claim), err)
	}
	switch {
	case domain == nil && plan.kind == apiv1beta1.DeviceTypeChannel:
		return nil, &channelPendingError{claim: klog.KObj(claim), domainUID: plan.domainUID,
			waitingFor: fmt.Sprintf("a ComputeDomain with UID %s in namespace %s", plan.domainUID, namespace),
			cause:      "there is none (not created yet, or deleted; a channel claim is served only by a domain of its own namespace)"}
	case domain == nil:
		return nil, fmt.Errorf("prepare claim %s: %w: no ComputeDomain with UID %s (not created yet, or deleted)", klog.KObj(claim), ErrWaitingForDomain, plan.domainUID)
	case plan.kind == apiv1beta1.DeviceTypeChannel:
		return s.prepareWorkload(ctx, claim, plan, domain)
	default:
		return s.prepareDaemon(ctx, claim, plan, domain)
	}
}

// prepareWorkload prepares a workload (channel) claim.
func (s *nodeState) prepareWorkload(ctx context.Context, claim *resourceapi.ResourceClaim, plan claimPlan, domain *apiv1beta1.ComputeDomain) ([]kubeletplugin.Device, error) {
	logger := klog.FromContext(ctx)
	uid := string(claim.UID)
	if claim.Namespace != domain.Namespace {
		return nil, fmt.Errorf("prepare claim %s: %w: the claim is in namespace %q but ComputeDomain %s is in %q; a domain's channel serves only its own namespace",
			klog.KObj(claim), ErrRefused, claim.Namespace, klog.KObj(domain), domain.Namespace)
	}
	data := deviceData{Kind: apiv1beta1.DeviceTypeChannel, DomainUID: domain.UID}
	// Record the claim before the first side effect (the CDI spec), so
	// unprepare and the stale-claim cleanup know about it whatever happens
	// next.
	if err := s.saveClaim(uid, checkpoint.ClaimState{Namespace: claim.Namespace, Name: claim.Name, Status: checkpoint.PrepareStarted, Devices: s.checkpointDevices(plan, data, nil)}); err != nil {
		return nil, fmt.Errorf("prepare claim %s: %w", klog.KObj(claim), err)
	}
	s.crash.At("prepare-started")

	if s.cfg.CliqueID == "" {
		// No multi-node fabric: nothing to inject. The daemon (placed by the
		// controller where the claim is allocated) reports the node without
		// a clique, and the domain's status says so.
		logger.Info("Node has no multi-node NVLink fabric; prepared the channel claim with nothing injected", "domain", klog.KObj(domain))
		return s.completeClaim(claim, plan, data, nil)
	}

	channel, ok := domain.ChannelReady(s.cfg.NodeName, s.cfg.CliqueID)
	if !ok {
		return nil, &channelPendingError{claim: klog.KObj(claim), domainUID: domain.UID,
			waitingFor: fmt.Sprintf("ComputeDomain %s to list node %s Ready in clique %s with a channel", klog.KObj(domain), s.cfg.NodeName, s.cfg.CliqueID),
			cause:      whyNotPlaced(domain, s.cfg.NodeName, s.cfg.CliqueID)}
	}
	if owner, other, held := s.channelHolder(int(channel), domain.UID); held {
		return nil, &channelPendingError{claim: klog.KObj(claim), domainUID: domain.UID,
			waitingFor: fmt.Sprintf("channel %d of ComputeDomain %s on this node", channel, klog.KObj(domain)),
			cause:      fmt.Sprintf("it is still prepared for claim %s of domain %s (its workload has not ended)", owner, other)}
	}
	channels, err := s.channelsFor(int(channel), plan.mode)
	if err != nil {
		return nil, fmt.Errorf("prepare claim %s: %w", klog.KObj(claim), err)
	}
	data.Channels = channels
	major, err := s.root.ImexChannelMajor()
	if err != nil {
		return nil, fmt.Errorf("prepare claim %s: %w", klog.KObj(claim), err)
	}
	ids, err := s.cdi.Write(cdi.ClaimSpec{ClaimUID: uid, Devices: []cdi.Device{{Name: cdiChannelDevice, Edits: channelEdits(major, channels)}}})
	if err != nil {
		return nil, fmt.Errorf("prepare claim %s: %w", klog.KObj(claim), err)
	}
	s.crash.At("cdi-written")
	logger.V(2).Info("Prepared channel claim", "domain", klog.KObj(domain), "channels", channels)
	return s.completeClaim(claim, plan, data, []string{ids[cdiChannelDevice]})
}

// channelHolder finds a claim of another domain that this node's checkpoint
// shows holding channel: a channel number is reused by the controller only
// after the old domain's workload let go of it, and this is the node's own
// guard against a pod of a new domain sharing it with one of the old.
func (s *nodeState) channelHolder(channel int, domainUID types.UID) (claimUID string, otherDomain types.UID, held bool) {
	for uid, cs := range s.ledger.Claims() {
		data, ok := claimData(cs.Devices)
		if ok && data.Kind == apiv1beta1.DeviceTypeChannel && data.DomainUID != domainUID && slices.Contains(data.Channels, channel) {
			return uid, data.DomainUID, true
		}
	}
	return "", "", false
}

// channelsFor returns the channels a claim gets and creates their device
// entries when missing. Whatever the allocation mode, that is the domain's
// channel for this node's clique: allocationMode All means every channel of
// the domain's IMEX ensemble, which holds one, and never a channel of another
// domain on the node (other tenants' channels, and channel 0 of a
// host-managed IMEX, stay out of the container).
func (s *nodeState) channelsFor(channel int, _ apiv1beta1.ComputeDomainAllocationMode) ([]int, error) {
	if _, err := s.root.CreateImexChannel(channel); err != nil {
		return nil, err
	}
	return []int{channel}, nil
}

// prepareDaemon prepares a daemon claim: identity, clique and config mount.
func (s *nodeState) prepareDaemon(ctx context.Context, claim *resourceapi.ResourceClaim, plan claimPlan, domain *apiv1beta1.ComputeDomain) ([]kubeletplugin.Device, error) {
	// A daemon claim hands out a domain's identity and a writable mount of its
	// IMEX config directory: only the operator's daemon pods may hold one.
	if claim.Namespace != s.cfg.OperatorNamespace {
		return nil, fmt.Errorf("prepare claim %s: %w: a %s claim comes only from the operator's IMEX daemon pods in namespace %q; a workload joins ComputeDomain %s through its channel claim template",
			klog.KObj(claim), ErrRefused, apiv1beta1.DeviceTypeDaemon, s.cfg.OperatorNamespace, klog.KObj(domain))
	}
	uid := string(claim.UID)
	data := deviceData{Kind: apiv1beta1.DeviceTypeDaemon, DomainUID: domain.UID}
	if err := s.saveClaim(uid, checkpoint.ClaimState{Namespace: claim.Namespace, Name: claim.Name, Status: checkpoint.PrepareStarted, Devices: s.checkpointDevices(plan, data, nil)}); err != nil {
		return nil, fmt.Errorf("prepare claim %s: %w", klog.KObj(claim), err)
	}
	s.crash.At("prepare-started")
	dir := s.domainConfigDir(domain.UID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("prepare claim %s: create IMEX config directory: %w", klog.KObj(claim), err)
	}
	id := identity.Identity{DomainUID: string(domain.UID), DomainName: domain.Name, DomainNamespace: domain.Namespace, CliqueID: s.cfg.CliqueID}
	ids, err := s.cdi.Write(cdi.ClaimSpec{ClaimUID: uid, Devices: []cdi.Device{{Name: cdiDaemonDevice, Edits: daemonEdits(id, dir)}}})
	if err != nil {
		return nil, fmt.Errorf("prepare claim %s: %w", klog.KObj(claim), err)
	}
	s.crash.At("cdi-written")
	klog.FromContext(ctx).V(2).Info("Prepared daemon claim", "domain", klog.KObj(domain), "configDir", dir)
	return s.completeClaim(claim, plan, data, []string{ids[cdiDaemonDevice]})
}

// domainConfigDir is the host directory of a domain's IMEX config.
func (s *nodeState) domainConfigDir(uid types.UID) string {
	return filepath.Join(s.cfg.DomainConfigRoot, string(uid))
}

func (s *nodeState) completeClaim(claim *resourceapi.ResourceClaim, plan claimPlan, data deviceData, cdiIDs []string) ([]kubeletplugin.Device, error) {
	cs := checkpoint.ClaimState{Namespace: claim.Namespace, Name: claim.Name, Status: checkpoint.PrepareCompleted, Devices: s.checkpointDevices(plan, data, cdiIDs)}
	if err := s.saveClaim(string(claim.UID), cs); err != nil {
		return nil, fmt.Errorf("prepare claim %s: %w", klog.KObj(claim), err)
	}
	return draplugin.PreparedDevices(cs), nil
}
