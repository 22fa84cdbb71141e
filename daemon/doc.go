// Package daemon is the compute-domain daemon: one node's IMEX daemon for one
// ComputeDomain. It renders the nvidia-imex config and nodes file from the
// domain's status (the node's clique peers), supervises the IMEX process
// (restarts it when it exits, makes it re-read the nodes file when the peers
// change), probes its readiness and reports it in the node's own
// ComputeDomainMember record.
//
// What it relies on of nvidia-imex is package imex's contract. The daemon runs
// the real programs (ExecStarter, CtlProber); the simulated cluster and the
// tests inject the stand-in (package imex/standin) through Options.Starter and
// Options.Prober instead.
package daemon
