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

// Package usage is a node plugin's usage ledger: an append-only, fsynced
// JSON-lines file recording when each claim's devices were prepared (an
// interval's start) and unprepared (its end), with the device facts billing
// needs (GPU memory, MIG profile and memory slices, sharing), so that a bill
// never depends on a device, claim or pod still existing.
//
// An interval is identified by (claim UID, start time): the start record's
// Time, which the plugin also keeps in its checkpoint (PreparedAt), so the
// ledger can be reconciled with the checkpoint after any crash without
// opening a claim's interval twice. Every record has a sequence number that is
// never reused, so a reader can pull the ledger incrementally
// (GET /usage?after=<seq>). Closed intervals older than the retention are
// dropped by Compact; sequence numbers carry on.
//
// The ledger never stops its node: a file that cannot be read whole (a
// damaged line, a header of another node from a cloned disk) is moved aside
// and the ledger written anew with what could be read (Quarantined says so).
// The header names the node that created the ledger, so the metering
// component can refuse a ledger served by another node.
package usage
