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

// Package placement is the end-to-end suite of gang placement (issue 14): ComputeDomain jobs that join their
// domain's PodGroup land all-or-nothing inside one NVLink clique. It runs in a test binary of its own because
// it needs a simulated cluster of another shape than the main suite's (4 GB200 NVL72 racks of 18 trays), and
// one simulated cluster runs per process.
package placement
