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
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// BillingUnits maps a DeviceClass to the unit its usage is billed in;
// classes not listed are billed in Default.
type BillingUnits struct {
	Default Unit
	Classes map[string]Unit
}

// For is the billing unit of a class.
func (b BillingUnits) For(class string) Unit {
	if u, ok := b.Classes[class]; ok {
		return u
	}
	if b.Default == "" {
		return DeviceSeconds
	}
	return b.Default
}

// ParseBillingUnit reads one --billing-unit value, <class>=<unit>.
func ParseBillingUnit(s string) (string, Unit, error) {
	class, unit, ok := strings.Cut(s, "=")
	if !ok || class == "" {
		return "", "", fmt.Errorf("--billing-unit %q: want <device class>=<unit>", s)
	}
	u, err := ParseUnit(unit)
	if err != nil {
		return "", "", fmt.Errorf("--billing-unit %q: %w", s, err)
	}
	return class, u, nil
}

// Row is the usage of one namespace's claims of one class.
type Row struct {
	Team        string           `json:"team"`
	Namespace   string           `json:"namespace"`
	DeviceClass string           `json:"deviceClass"`
	Usage       map[Unit]float64 `json:"usage"`
	BillingUnit Unit             `json:"billingUnit"`
	Billed      float64          `json:"billed"`
}

// TeamBill is what a team is billed, per unit.
type TeamBill struct {
	Team   string           `json:"team"`
	Billed map[Unit]float64 `json:"billed"`
}

// ReportInterval is one device interval of the period, clipped to it.
type ReportInterval struct {
	Node        string    `json:"node"`
	Team        string    `json:"team"`
	Namespace   string    `json:"namespace"`
	Claim       string    `json:"claim"`
	ClaimUID    string    `json:"claimUID"`
	Pods        []string  `json:"pods,omitempty"`
	Device      string    `json:"device"`
	DeviceClass string    `json:"deviceClass"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	Open        bool      `json:"open,omitempty"`
	Seconds     float64   `json:"seconds"`
	// ShareID is set for one share of a device (consumable capacity);
	// ConsumedMemoryGiB is the memory the share consumes, which its
	// GPU-memory GiB-seconds are billed by (Totals).
	ShareID           string  `json:"shareID,omitempty"`
	ConsumedMemoryGiB float64 `json:"consumedMemoryGiB,omitempty"`
}

// Report is the usage of one period [From, To).
type Report struct {
	From      time.Time        `json:"from"`
	To        time.Time        `json:"to"`
	Rows      []Row            `json:"rows"`
	Teams     []TeamBill       `json:"teams"`
	Intervals []ReportInterval `json:"intervals"`
}

// BuildReport adds up the intervals over [from, to).
func BuildReport(intervals []Interval, from, to time.Time, units BillingUnits) Report {
	totals := Totals(intervals, from, to)
	type rowKey struct{ team, ns, class string }
	rows := map[rowKey]*Row{}
	for k, v := range totals {
		rk := rowKey{k.Team, k.Namespace, k.DeviceClass}
		r := rows[rk]
		if r == nil {
			r = &Row{Team: k.Team, Namespace: k.Namespace, DeviceClass: k.DeviceClass, Usage: map[Unit]float64{}, BillingUnit: units.For(k.DeviceClass)}
			rows[rk] = r
		}
		r.Usage[k.Unit] += v
	}
	rep := Report{From: from, To: to, Rows: []Row{}, Teams: []TeamBill{}, Intervals: []ReportInterval{}}
	teams := map[string]map[Unit]float64{}
	for _, rk := range slices.SortedFunc(maps.Keys(rows), func(a, b rowKey) int {
		return strings.Compare(a.team+"\x00"+a.ns+"\x00"+a.class, b.team+"\x00"+b.ns+"\x00"+b.class)
	}) {
		r := rows[rk]
		r.Billed = r.Usage[r.BillingUnit]
		rep.Rows = append(rep.Rows, *r)
		if teams[r.Team] == nil {
			teams[r.Team] = map[Unit]float64{}
		}
		teams[r.Team][r.BillingUnit] += r.Billed
	}
	for _, t := range slices.Sorted(maps.Keys(teams)) {
		rep.Teams = append(rep.Teams, TeamBill{Team: t, Billed: teams[t]})
	}
	for _, iv := range intervals {
		s, e := iv.Start, iv.End
		if s.Before(from) {
			s = from
		}
		if e.After(to) {
			e = to
		}
		if !e.After(s) {
			continue
		}
		ri := ReportInterval{Node: iv.Node, Team: iv.Team, Namespace: iv.Namespace, Claim: iv.Claim, ClaimUID: iv.ClaimUID,
			Pods: iv.Pods, Device: iv.Device.Name, DeviceClass: iv.Device.Class, Start: s, End: e, Open: iv.Open, Seconds: e.Sub(s).Seconds(),
			ShareID: iv.Device.ShareID}
		ri.ConsumedMemoryGiB, _ = shareMemoryGiB(iv.Device)
		rep.Intervals = append(rep.Intervals, ri)
	}
	return rep
}

// Format is a report's output format.
type Format string

const (
	FormatCSV  Format = "csv"
	FormatJSON Format = "json"
)

// ParseFormat names the allowed formats when s is none of them.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case FormatCSV, FormatJSON:
		return Format(s), nil
	}
	return "", fmt.Errorf("format %q: allowed: csv, json", s)
}

// CSVHeader is the first line of a CSV report.
var CSVHeader = []string{"from", "to", "team", "namespace", "device_class", "device_seconds", "gpu_memory_gib_seconds", "mig_slice_seconds", "billing_unit", "billed"}

// Write writes the report: JSON with rows, team bills and intervals; CSV
// with one line per row.
func (r Report) Write(w io.Writer, f Format) error {
	if f == FormatJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, row := range r.Rows {
		if err := cw.Write([]string{r.From.Format(time.RFC3339), r.To.Format(time.RFC3339), row.Team, row.Namespace, row.DeviceClass,
			num(row.Usage[DeviceSeconds]), num(row.Usage[GPUMemoryGiBSeconds]), num(row.Usage[MIGSliceSeconds]), string(row.BillingUnit), num(row.Billed)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
