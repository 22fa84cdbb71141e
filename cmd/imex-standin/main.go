// Command imex-standin stands in for nvidia-imex and nvidia-imex-ctl where no
// multi-node NVLink fabric exists (mock or kind nodes without real IMEX); see
// package internal/imex/standin. It is a test tool, not one of the operator's
// components: the compute-domain daemon runs it as --imex-binary and
// --imex-ctl.
package main

import "github.com/computedomain-operator/computedomain-operator/internal/imex/standin"

func main() { standin.Main() }
