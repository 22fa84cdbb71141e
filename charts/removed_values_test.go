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

package charts

import (
	"os/exec"
	"strings"
	"testing"
)

// Values of earlier versions are refused with a message that names the value and says what to do instead.
func TestRemovedValuesAreRefusedWithWhatToDo(t *testing.T) {
	cases := map[string]struct {
		set  string
		want []string
	}{
		"the per-domain IMEX mode":          {set: "computeDomainDaemon.imexMode=Domain", want: []string{"computeDomainDaemon.imexMode is removed", "delete computeDomainDaemon.imexMode"}},
		"the Clique mode, named explicitly": {set: "computeDomainDaemon.imexMode=Clique", want: []string{"computeDomainDaemon.imexMode is removed"}},
		"the per-domain daemons' account":   {set: "computeDomainDaemon.serviceAccountName=cd-daemon", want: []string{"computeDomainDaemon.serviceAccountName is removed", "cliqueDaemon.serviceAccountName"}},
		"the member-record policy":          {set: "memberRecordPolicy.enabled=false", want: []string{"memberRecordPolicy is renamed imexNodePolicy", "imexNodePolicy.enabled"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(helmBinary(t), "template", "cdo", chartDir, "--kube-version", kubeVersion, "--set", tc.set).CombinedOutput()
			if err == nil {
				t.Fatalf("helm template --set %s rendered", tc.set)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("helm template --set %s: the error does not say %q:\n%s", tc.set, w, out)
				}
			}
		})
	}
}
