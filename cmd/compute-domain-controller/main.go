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

// Command compute-domain-controller runs the ComputeDomain controller. All of it lives in package app, so
// the simulated cluster can run it in-process.
package main

import (
	"github.com/computedomain-operator/computedomain-operator/cmd/compute-domain-controller/app"
	"github.com/computedomain-operator/computedomain-operator/cmd/internal/startup"
)

func main() { startup.Main("compute-domain-controller", app.Run) }
