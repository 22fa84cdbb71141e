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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// Version names an on-disk format.
type Version string

const (
	// V1 is the first format: prepared claims only, no boot ID, no progress
	// status. Read for upgrades, never written.
	V1 Version = "v1"
	// V2 adds the node boot ID and the started/completed status per claim.
	V2 Version = "v2"
	// CurrentVersion is what Save writes.
	CurrentVersion = V2
)

// ErrCorrupt reports a file that cannot be trusted (bad JSON or checksum).
var ErrCorrupt = errors.New("checkpoint is corrupt")

// envelope is the versioned wrapper around every format.
type envelope struct {
	Version  Version         `json:"version"`
	Checksum string          `json:"checksum"`
	Data     json.RawMessage `json:"data"`
}

// v1Data is the V1 payload.
type v1Data struct {
	PreparedClaims map[string]v1Claim `json:"preparedClaims"`
}

type v1Claim struct {
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	Devices   []v1Device `json:"devices"`
}

type v1Device struct {
	Requests     []string `json:"requests,omitempty"`
	Pool         string   `json:"pool"`
	Device       string   `json:"device"`
	CDIDeviceIDs []string `json:"cdiDeviceIDs,omitempty"`
}

func checksum(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// encode renders a checkpoint in the current format.
func encode(cp Checkpoint) ([]byte, error) {
	if cp.Claims == nil {
		cp.Claims = map[string]ClaimState{}
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint: %w", err)
	}
	return json.Marshal(envelope{Version: CurrentVersion, Checksum: checksum(data), Data: data})
}

// decode parses any supported format and converts it to the current one.
func decode(raw []byte) (Checkpoint, error) {
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	// The checksum covers the compact form, so indentation does not matter.
	var compact bytes.Buffer
	if err := json.Compact(&compact, env.Data); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if got := checksum(compact.Bytes()); got != env.Checksum {
		return Checkpoint{}, fmt.Errorf("%w: checksum %q does not match content (%q)", ErrCorrupt, env.Checksum, got)
	}
	switch env.Version {
	case V2:
		var cp Checkpoint
		if err := json.Unmarshal(env.Data, &cp); err != nil {
			return Checkpoint{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if cp.Claims == nil {
			cp.Claims = map[string]ClaimState{}
		}
		for uid, cs := range cp.Claims {
			if cs.Status != PrepareStarted && cs.Status != PrepareCompleted {
				return Checkpoint{}, fmt.Errorf("%w: claim %s: status %q, allowed: %s, %s", ErrCorrupt, uid, cs.Status, PrepareStarted, PrepareCompleted)
			}
		}
		return cp, nil
	case V1:
		var old v1Data
		if err := json.Unmarshal(env.Data, &old); err != nil {
			return Checkpoint{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return convertV1(old), nil
	default:
		return Checkpoint{}, fmt.Errorf("checkpoint version %q is not supported, allowed: %s, %s", env.Version, V1, V2)
	}
}

// convertV1 upgrades a V1 payload. V1 only recorded claims whose prepare had
// finished, so they become PrepareCompleted. V1 had no boot ID: the empty
// BootID means "unknown" and the state is kept, because dropping it could hand
// prepared devices to a second claim.
func convertV1(old v1Data) Checkpoint {
	cp := New("")
	for uid, c := range old.PreparedClaims {
		cs := ClaimState{Namespace: c.Namespace, Name: c.Name, Status: PrepareCompleted}
		for _, d := range c.Devices {
			cs.Devices = append(cs.Devices, PreparedDevice{Requests: d.Requests, Pool: d.Pool, Device: d.Device, CDIDeviceIDs: d.CDIDeviceIDs})
		}
		cp.Claims[uid] = cs
	}
	return cp
}
