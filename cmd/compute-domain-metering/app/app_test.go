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
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestBadFlagsNameTheFlag(t *testing.T) {
	env := func(string) (string, bool) { return "", false }
	withNS := func(k string) (string, bool) { return "operator", k == "POD_NAMESPACE" }
	cases := map[string]struct {
		args   []string
		lookup func(string) (string, bool)
		want   string
	}{
		"no namespace":          {lookup: env, want: "--namespace: must be set"},
		"a bad billing unit":    {args: []string{"--billing-unit=mig.nvidia.com=slices"}, lookup: withNS, want: `--billing-unit "mig.nvidia.com=slices": unit "slices": allowed:`},
		"a bad default unit":    {args: []string{"--default-billing-unit=hours"}, lookup: withNS, want: `--default-billing-unit: unit "hours"`},
		"a pull interval of 0":  {args: []string{"--pull-interval=0s"}, lookup: withNS, want: "--pull-interval 0s: must be at least 100ms"},
		"a stray argument":      {args: []string{"extra"}, lookup: withNS, want: "the only subcommand is report"},
		"a plugin port of zero": {args: []string{"--plugin-port=0"}, lookup: withNS, want: "--plugin-port 0: must be from 1 to 65535"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := parse(tc.args, tc.lookup); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	o, err := parse([]string{"--billing-unit=mig.nvidia.com=mig-slice-seconds"}, withNS)
	if err != nil || o.units.For("mig.nvidia.com") != "mig-slice-seconds" || o.units.For("gpu.nvidia.com") != "device-seconds" {
		t.Errorf("parse: %+v, %v; want MIG billed in slice-seconds, GPUs in device-seconds", o, err)
	}
}

func TestReportRefusesBadFlagsBeforeAsking(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"no from":      {args: []string{"--server=http://m:8080", "--to=2026-12-01T00:00:00Z"}, want: `--from "": must be an RFC 3339 time`},
		"a bad format": {args: []string{"--server=http://m:8080", "--from=2026-11-01T00:00:00Z", "--to=2026-12-01T00:00:00Z", "--format=xml"}, want: `--format "xml": allowed: csv, json`},
		"no server":    {args: []string{"--from=2026-11-01T00:00:00Z", "--to=2026-12-01T00:00:00Z"}, want: `--server "": must be an http(s) URL`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := Report(context.Background(), tc.args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
