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

package draplugin

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

func TestHandleBackgroundErrorStopsOnlyOnFatalErrors(t *testing.T) {
	cases := map[string]struct {
		err       error
		wantFatal string
	}{
		"a recoverable error is retried by the helper": {
			err: fmt.Errorf("publish: conflict: %w", kubeletplugin.ErrRecoverable),
		},
		"any other error stops the plugin": {
			err:       errors.New("fields dropped by the API server"),
			wantFatal: "publishing ResourceSlices: fields dropped by the API server",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var fatal []string
			HandleBackgroundError(context.Background(), tc.err, "publishing ResourceSlices", func(err error) { fatal = append(fatal, err.Error()) })
			switch {
			case tc.wantFatal == "" && len(fatal) > 0:
				t.Errorf("fatal errors %v, want none", fatal)
			case tc.wantFatal != "" && (len(fatal) != 1 || fatal[0] != tc.wantFatal):
				t.Errorf("fatal errors %v, want [%s]", fatal, tc.wantFatal)
			}
		})
	}
	// Without a fatal handler every error is only logged.
	HandleBackgroundError(context.Background(), errors.New("fields dropped"), "publishing ResourceSlices", nil)
}
