// Command compute-domain-controller runs the ComputeDomain controller. All of it lives in package app, so
// the simulated cluster can run it in-process.
package main

import (
	"github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-controller/app"
	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
)

func main() { startup.Main("compute-domain-controller", app.Run) }
