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

package app

import (
	"strings"
	"testing"
	"time"
)

func TestParseRejects(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"a port out of range":                  {[]string{"--port=0"}, "--port 0: must be 1..65535"},
		"a relative cert directory":            {[]string{"--cert-dir=certs"}, `--cert-dir "certs": must be an absolute path`},
		"a driver name that is not a DNS name": {[]string{"--gpu-driver-name=GPU_Driver"}, `--gpu-driver-name "GPU_Driver": must be a DNS subdomain`},
		"the same name for both drivers":       {[]string{"--compute-domain-driver-name=gpu.nvidia.com"}, "must differ"},
		"a positional argument":                {[]string{"serve"}, `unexpected arguments ["serve"]`},
		"a negative credential give-up":        {[]string{"--credential-give-up=-1s"}, "--credential-give-up -1s: must not be negative (0: never)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parse(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parse(%q) = %v; want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	o, err := parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.port != 9443 || o.drivers.GPU != "gpu.nvidia.com" || o.drivers.ComputeDomain != "compute-domain.nvidia.com" || o.credentialGiveUp != 2*time.Minute {
		t.Errorf("defaults: port %d, drivers %+v, credential give-up %s", o.port, o.drivers, o.credentialGiveUp)
	}
}

func TestParsePodGroups(t *testing.T) {
	o, err := parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.podGroups {
		t.Error("the pod-group webhook is on by default; want it opt-in")
	}
	o, err = parse([]string{"--pod-groups", "--kubeconfig=/etc/kubeconfig"})
	if err != nil {
		t.Fatal(err)
	}
	if !o.podGroups || o.kubeconfig != "/etc/kubeconfig" {
		t.Errorf("--pod-groups --kubeconfig: got podGroups %v, kubeconfig %q", o.podGroups, o.kubeconfig)
	}
}
