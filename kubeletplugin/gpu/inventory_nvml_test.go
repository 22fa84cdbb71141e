package gpu

import (
	"errors"
	"fmt"
	"testing"

	"github.com/computedomain-operator/computedomain-operator/internal/nvml"
)

func TestCliqueOrNone(t *testing.T) {
	cases := map[string]struct {
		clique  string
		err     error
		want    string
		wantErr bool
	}{
		"a settled clique is published":           {clique: "c.1", want: "c.1"},
		"no fabric, no clique":                    {},
		"a fabric still registering gives none":   {err: fmt.Errorf("GPU 2: %w", nvml.ErrFabricNotReady)},
		"GPUs that disagree give none":            {err: fmt.Errorf("GPU 1: %w", nvml.ErrCliqueMismatch)},
		"any other NVML failure stops discovery":  {err: errors.New("driver gone"), wantErr: true},
		"a lost GPU is an error, not a no-clique": {err: fmt.Errorf("GPU 0: %w", nvml.ErrGPULost), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := cliqueOrNone(testContext(t), tc.clique, tc.err)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("clique = %q, want %q", got, tc.want)
			}
		})
	}
}
