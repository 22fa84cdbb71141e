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

package checkpoint

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzDecode feeds decode payloads wrapped in an envelope whose checksum is computed here, so that the fuzzer
// reaches the version switch and the payload decoders instead of stopping at the checksum. A payload that
// decodes must encode and decode again to the same checkpoint; nothing may panic.
func FuzzDecode(f *testing.F) {
	for _, seed := range []struct {
		version Version
		data    string
	}{
		{V2, `{"bootID":"b1","claims":{"uid-1":{"namespace":"ns","name":"c","status":"PrepareCompleted","devices":[{"pool":"n1","device":"gpu-0","cdiDeviceIDs":["k8s.gpu.nvidia.com/claim=uid-1-gpu-0"]}]}}}`},
		{V2, `{"bootID":"b1","claims":{"uid-1":{"status":"PrepareStarted"}}}`},
		{V2, `{"bootID":"","claims":null}`},
		{V2, `{"claims":{"u":{"status":"Bogus"}}}`},
		{V1, `{"preparedClaims":{"uid-1":{"namespace":"ns","name":"c","devices":[{"pool":"n1","device":"gpu-0"}]}}}`},
		{"v9", `{}`},
	} {
		f.Add(string(seed.version), []byte(seed.data))
	}
	f.Fuzz(func(t *testing.T, version string, data []byte) {
		var compact bytes.Buffer
		if json.Compact(&compact, data) != nil {
			return // the envelope's data must be JSON; decode rejects anything else before the checksum
		}
		raw, err := json.Marshal(envelope{Version: Version(version), Checksum: checksum(compact.Bytes()), Data: compact.Bytes()})
		if err != nil {
			return
		}
		cp, err := decode(raw)
		if err != nil {
			return
		}
		again, err := encode(cp)
		if err != nil {
			t.Fatalf("encode of a decoded checkpoint: %v", err)
		}
		back, err := decode(again)
		if err != nil {
			t.Fatalf("decode of an encoded checkpoint: %v", err)
		}
		// An empty device list and none mean the same; JSON keeps only the first.
		if diff := cmp.Diff(cp, back, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("round trip (-decoded +again):\n%s", diff)
		}
	})
}
