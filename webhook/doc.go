// Package webhook is the operator's optional admission webhook (off by default in the chart, as NVIDIA's is):
// it rejects ResourceClaims and ResourceClaimTemplates whose opaque device configs for our drivers would fail
// at prepare time, so that a typo is an error at `kubectl apply`, naming the field, instead of a pod stuck in
// ContainerCreating.
//
// File map:
//   - opaque_config.go: the validation of a claim spec's opaque configs (pure, table-tested).
//   - handlers.go: the admission handlers for ResourceClaims and ResourceClaimTemplates and their paths.
package webhook
