package computedomain

import "errors"

// ErrWaitingForDomain marks the retryable answer of a workload prepare while
// the domain is not ready on this node yet; the kubelet calls again.
var ErrWaitingForDomain = errors.New("waiting for the ComputeDomain")

// ErrRefused marks a claim that can never be prepared as it is (wrong
// namespace, bad config, unknown device); retrying does not help.
var ErrRefused = errors.New("claim refused")
