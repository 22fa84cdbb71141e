// Copyright The computedomain-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

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
