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

// Command compute-domain-metering pulls the GPU plugins' usage ledgers and
// serves usage per team as Prometheus metrics and period reports; its report
// subcommand asks a running one for a report.
package main

import (
	"github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-metering/app"
	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
)

func main() { startup.Main("compute-domain-metering", app.Run) }
