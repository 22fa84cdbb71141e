// Command compute-domain-daemon runs one node's IMEX daemon for one
// ComputeDomain; see package daemon.
package main

import (
	"github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-daemon/app"
	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
)

func main() { startup.Main("compute-domain-daemon", app.Run) }
