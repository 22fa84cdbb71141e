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

// Package cdi writes one Container Device Interface spec per ResourceClaim.
//
// The spec kind is "k8s.<driver name>/claim" and the file is
// "<cdi root>/k8s.<driver>-claim_<claim UID>.json", so every claim has its own
// file that unprepare deletes as a whole, and CDI device IDs are never reused
// across claims (a runtime's cache cannot serve a stale device).
package cdi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	cdiapi "tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
	cdispec "tags.cncf.io/container-device-interface/specs-go"

	"github.com/computedomain-operator/computedomain-operator/internal/atomicfile"
)

// ClassName is the CDI class of every per-claim spec.
const ClassName = "claim"

// Writer writes and removes per-claim spec files under one directory.
type Writer struct {
	root   string
	vendor string
}

// NewWriter returns a writer for the CDI directory root and the DRA driver
// name (the CDI vendor becomes "k8s.<driverName>").
func NewWriter(root, driverName string) (*Writer, error) {
	vendor := "k8s." + driverName
	if err := parser.ValidateVendorName(vendor); err != nil {
		return nil, fmt.Errorf("driver name %q does not make a valid CDI vendor: %w", driverName, err)
	}
	if root == "" {
		return nil, errors.New("CDI root must not be empty")
	}
	return &Writer{root: root, vendor: vendor}, nil
}

// Kind is "<vendor>/claim".
func (w *Writer) Kind() string { return w.vendor + "/" + ClassName }

// Root is the directory the specs go to.
func (w *Writer) Root() string { return w.root }

// Device is one CDI device of a claim.
type Device struct {
	// Name is unique within the claim; the CDI device name becomes
	// "<claim UID>-<Name>".
	Name  string
	Edits cdispec.ContainerEdits
}

// ClaimSpec is everything a claim exposes to its containers.
type ClaimSpec struct {
	ClaimUID string
	// Common edits apply to every container that gets any device of the claim
	// (control device nodes, claim-wide environment, the driver's files).
	Common  cdispec.ContainerEdits
	Devices []Device
}

// DeviceID is the fully qualified CDI device ID for a device of a claim.
func (w *Writer) DeviceID(claimUID, device string) string {
	return parser.QualifiedName(w.vendor, ClassName, deviceName(claimUID, device))
}

func deviceName(claimUID, device string) string { return claimUID + "-" + device }

// SpecPath is the file that holds a claim's spec.
func (w *Writer) SpecPath(claimUID string) string {
	return filepath.Join(w.root, cdiapi.GenerateTransientSpecName(w.vendor, ClassName, claimUID)+".json")
}

// Write validates and atomically writes (temp file, fsync, rename) the claim's
// spec, replacing an earlier one. It returns the CDI device ID per device name.
func (w *Writer) Write(spec ClaimSpec) (map[string]string, error) {
	if spec.ClaimUID == "" {
		return nil, errors.New("write CDI spec: claim UID must not be empty")
	}
	raw := &cdispec.Spec{Kind: w.Kind(), ContainerEdits: spec.Common}
	ids := make(map[string]string, len(spec.Devices))
	for _, d := range spec.Devices {
		name := deviceName(spec.ClaimUID, d.Name)
		if err := parser.ValidateDeviceName(name); err != nil {
			return nil, fmt.Errorf("write CDI spec for claim %s: device %q: %w", spec.ClaimUID, d.Name, err)
		}
		if _, dup := ids[d.Name]; dup {
			return nil, fmt.Errorf("write CDI spec for claim %s: device %q listed twice", spec.ClaimUID, d.Name)
		}
		raw.Devices = append(raw.Devices, cdispec.Device{Name: name, ContainerEdits: d.Edits})
		ids[d.Name] = w.DeviceID(spec.ClaimUID, d.Name)
	}
	if len(raw.Devices) == 0 {
		return nil, fmt.Errorf("write CDI spec for claim %s: a spec needs at least one device", spec.ClaimUID)
	}
	version, err := cdispec.MinimumRequiredVersion(raw)
	if err != nil {
		return nil, fmt.Errorf("write CDI spec for claim %s: %w", spec.ClaimUID, err)
	}
	raw.Version = version
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("write CDI spec for claim %s: %w", spec.ClaimUID, err)
	}
	path := w.SpecPath(spec.ClaimUID)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("write CDI spec for claim %s: %w", spec.ClaimUID, err)
	}
	// The temp file's name does not end in .json, so a runtime scanning the
	// directory never reads a partial spec.
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return nil, fmt.Errorf("write CDI spec for claim %s: %w", spec.ClaimUID, err)
	}
	return ids, nil
}

// Delete removes a claim's spec; a missing file is not an error.
func (w *Writer) Delete(claimUID string) error {
	err := os.Remove(w.SpecPath(claimUID))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete CDI spec for claim %s: %w", claimUID, err)
	}
	return nil
}

// ClaimUIDs lists the claims that have a spec file written by this writer.
func (w *Writer) ClaimUIDs() ([]string, error) {
	entries, err := os.ReadDir(w.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list CDI specs: %w", err)
	}
	prefix := cdiapi.GenerateTransientSpecName(w.vendor, ClassName, "")
	var uids []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ".json") {
			continue
		}
		uids = append(uids, strings.TrimSuffix(strings.TrimPrefix(name, prefix), ".json"))
	}
	return uids, nil
}
