// Package computedomain reconciles ComputeDomains: it creates the workload and daemon claim templates
// and the per-domain IMEX daemon DaemonSet, assigns per-clique node indices and IMEX channels from the
// daemons' ComputeDomainMember records, aggregates the domain's status, and tears everything down through
// the domain's finalizer. The design is docs/design/computedomains.md.
package computedomain
