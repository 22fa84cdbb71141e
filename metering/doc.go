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

// Package metering joins the GPU plugins' usage ledgers (internal/usage)
// with the API server (claim → pod, namespace → team) and turns them into
// usage per team, namespace and DeviceClass in the billing units: device-
// seconds, GPU-memory GiB-seconds and MIG slice-seconds.
//
// It keeps no totals of its own: every figure is computed, each time it is
// asked for, from the ledger records it has pulled, keyed by (ledger, claim
// UID, interval start). A restarted metering component pulls the ledgers from
// the beginning again and gets the same figures, and one that was down pulls
// what the nodes recorded meanwhile.
//
// It does not take a node's word for what it cannot check (trust.go): each
// ledger is bound to the node that serves it and refused from any other,
// each interval's claim is checked against the API server (APIClaims
// remembers deleted claims), each claim's use of a device is billed once
// across ledgers, and the meter's own clock bounds every interval. See
// docs/metering.md.
package metering
