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

// Package checkpoint persists a node plugin's per-claim preparation state in one
// versioned, checksummed JSON file.
//
// Every claim goes through two recorded states: PrepareStarted is written before
// any side effect (MIG instance, sharing setting, CDI spec) happens, and
// PrepareCompleted after all of them succeeded. A plugin that crashes between the
// two finds the claim in PrepareStarted on restart and knows which devices were
// (possibly half) set up for which claim, so it can roll back or retry without
// handing a device to two claims.
//
// The file also records the node's boot ID: state written before a reboot is
// stale (devices, MIG instances and CDI specs are gone) and is discarded on load.
//
// Writes are crash-safe: the new content goes to a temporary file in the same
// directory, which is fsynced and renamed over the old file (see Store.Save for
// why the directory needs no fsync given the boot-ID rule).
package checkpoint
