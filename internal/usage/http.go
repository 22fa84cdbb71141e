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

package usage

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"k8s.io/utils/clock"
)

// Path is where a plugin serves its ledger.
const Path = "/usage"

// MaxRecordsPerPage bounds one answer; a reader asks again with the last seq.
const MaxRecordsPerPage = 5000

// Page is one answer of GET /usage?after=<seq>.
type Page struct {
	// Ledger is the ledger's ID; Node the plugin's node; LedgerNode the
	// node the ledger's header names (its creator, or the node that adopted
	// a ledger written before headers named one).
	Ledger     string `json:"ledger"`
	Node       string `json:"node"`
	LedgerNode string `json:"ledgerNode,omitempty"`
	// Now is the node's time of the answer: open intervals last at least
	// until then.
	Now time.Time `json:"now"`
	// NextSeq is the number the next record will get.
	NextSeq uint64   `json:"nextSeq"`
	Records []Record `json:"records"`
	// More says that records after the last one were left out.
	More bool `json:"more"`
	// Quarantined are the ledger files the plugin moved aside because they
	// could not be read whole.
	Quarantined []Quarantine `json:"quarantined,omitempty"`
}

// Handler serves the ledger read-only: GET /usage?after=<seq>[&limit=<n>].
func Handler(l *Ledger, node string, clk clock.PassiveClock) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, fmt.Sprintf("method %s: allowed: GET", r.Method), http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		var after uint64
		if v := q.Get("after"); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				http.Error(w, fmt.Sprintf("after %q: must be a sequence number (an unsigned integer)", v), http.StatusBadRequest)
				return
			}
			after = n
		}
		limit := MaxRecordsPerPage
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxRecordsPerPage {
				http.Error(w, fmt.Sprintf("limit %q: must be an integer from 1 to %d", v, MaxRecordsPerPage), http.StatusBadRequest)
				return
			}
			limit = n
		}
		recs, more := l.After(after, limit)
		next := l.NextSeq()
		// The clock after the records: every record of the page is at or
		// before Now.
		now := clk.Now().UTC()
		if recs == nil {
			recs = []Record{}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Page{Ledger: l.ID(), Node: node, LedgerNode: l.Node(), Now: now, NextSeq: next, Records: recs, More: more, Quarantined: l.Quarantined()})
	})
}
