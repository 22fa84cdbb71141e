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

package metering

import (
	"fmt"
	"net/http"
	"time"
)

// ReportPath serves reports: GET /report?from=<RFC3339>&to=<RFC3339>&format=csv|json.
const ReportPath = "/report"

// ReportHandler answers with the report of the period the query names.
func ReportHandler(m *Meter, units BillingUnits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		from, to, err := ParsePeriod(q.Get("from"), q.Get("to"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f := FormatCSV
		if v := q.Get("format"); v != "" {
			if f, err = ParseFormat(v); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		if f == FormatJSON {
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header().Set("Content-Type", "text/csv")
		}
		_ = BuildReport(m.Intervals(), from, to, units).Write(w, f)
	})
}

// ParsePeriod reads a report's period, naming the bad field.
func ParsePeriod(fromS, toS string) (time.Time, time.Time, error) {
	from, err := time.Parse(time.RFC3339Nano, fromS)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("from %q: must be an RFC 3339 time (2026-11-01T00:00:00Z)", fromS)
	}
	to, err := time.Parse(time.RFC3339Nano, toS)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("to %q: must be an RFC 3339 time (2026-12-01T00:00:00Z)", toS)
	}
	if !to.After(from) {
		return time.Time{}, time.Time{}, fmt.Errorf("to %s: must be after from %s", toS, fromS)
	}
	return from.UTC(), to.UTC(), nil
}
