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

// Command mps-control-standin stands in for nvidia-cuda-mps-control (the MPS
// control daemon and its control tool) where no real one exists (the
// simulated cluster, kind with mock NVML); see package internal/mps/standin.
// It is a test tool, not one of the operator's components: the GPU kubelet
// plugin runs it as --mps-control-binary.
package main

import "github.com/computedomain-operator/computedomain-operator/internal/mps/standin"

func main() { standin.Main() }
