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

// Command kubectl-computedomain is a kubectl plugin (kubectl computedomain ...) that shows the cluster's NVLink
// topology: the racks with their free trays and the domains holding the others, and one ComputeDomain with
// what blocks it. It only reads the Kubernetes API.
package main

import (
	"fmt"
	"os"

	"github.com/computedomain-operator/computedomain-operator/cmd/kubectl-computedomain/app"
)

func main() {
	if err := app.NewCommand(app.Streams{Out: os.Stdout, ErrOut: os.Stderr}, nil).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
