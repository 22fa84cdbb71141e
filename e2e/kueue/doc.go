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

// Package kueue is the end-to-end suite of Kueue v0.17.0 on our DeviceClasses (issues 14 and 15): quota per
// DeviceClass with borrowing inside a cohort, MIG charged per profile and by memory slices, the two-team story of
// e2e/tenants (borrowing, the sharing policy, the metering bill across its restart; also `make demo-tenants`),
// and topology-aware scheduling of a ComputeDomain job on the NVLink clique label. Kueue runs as its own process (bin/kueue, `make
// kueue`) against a simulated cluster of 2 GB200 NVL72 racks of 18 trays and one MIG-enabled A100 node; the
// suite applies demo/kueue/*.yaml. It runs in a test binary of its own because one simulated cluster runs per
// process. docs/kueue.md reads its outcomes.
package kueue
