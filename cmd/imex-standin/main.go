// Command imex-standin stands in for nvidia-imex and nvidia-imex-ctl where no
// multi-node NVLink fabric exists; see package daemon/imexstandin.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/computedomain-operator/computedomain-operator/daemon/imexstandin"
)

func main() {
	if err := imexstandin.Run(context.Background(), os.Args[1:], os.Stdout, true); err != nil {
		if !errors.Is(err, imexstandin.ErrNotReady) {
			fmt.Fprintln(os.Stderr, "imex-standin:", err)
		}
		os.Exit(1)
	}
}
