// Command compute-domain-webhook serves the optional validating admission webhook for the opaque device configs
// in ResourceClaims and ResourceClaimTemplates (package webhook). All of it lives in package app.
package main

import (
	"github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-webhook/app"
	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
)

func main() { startup.Main("compute-domain-webhook", app.Run) }
