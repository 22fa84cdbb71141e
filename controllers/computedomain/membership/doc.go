// Package membership turns the ComputeDomainMember records of one domain into the domain's status: stable
// per-clique node indices (at most 18 nodes per NVL72 clique), one clique entry with its IMEX channel per
// NVLink clique, and the Ready, DaemonsReady and Degraded conditions. It is pure: the reconciler feeds it
// the records, the channels it allocated and the time, and writes the result once.
package membership
