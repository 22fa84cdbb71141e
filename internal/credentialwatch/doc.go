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

// Package credentialwatch ends a process whose credentials the API server refuses for good.
//
// A pod's service account token is bound to the pod: once the pod object is gone, the API server refuses the
// token. A process can outlive its pod: its node's kubelet is down or cut off from the control plane, and the
// pod is force-deleted (by an operator, or by the pod garbage collector once the Node is deleted). Such a
// process can no longer read or write anything, yet a server in it may still be reached over connections
// opened before (the API server keeps its connections to a webhook alive, and an established connection
// outlives the Service endpoint it was opened through). A webhook in that state answers every call with the
// API server's refusal. Watch notices the refusal lasting longer than a token renewal can take and returns an
// error, so that the process exits and the connections to it close.
package credentialwatch
