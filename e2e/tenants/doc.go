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

// Package tenants is the multi-tenant story of issue 15 (docs/multi-tenancy.md) as code that both the e2e/kueue
// suite and `simcluster demo-tenants` run: two teams with GPU quota in one Kueue cohort, a job that borrows the
// other team's idle quota, a time-slicing claim refused outside a team and admitted inside one, the metering
// component restarted mid-way, and the bill of `compute-domain-metering report` next to the allocation
// intervals the story measured. It also holds the metering and Kueue helpers the e2e suites share.
package tenants
