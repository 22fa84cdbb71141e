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

package computedomain

import "errors"

// ErrWaitingForDomain marks the retryable answer of a workload prepare while
// the domain is not ready on this node yet; the kubelet calls again.
var ErrWaitingForDomain = errors.New("waiting for the ComputeDomain")

// ErrRefused marks a claim that can never be prepared as it is (wrong
// namespace, bad config, unknown device); retrying does not help.
var ErrRefused = errors.New("claim refused")
