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

package simcluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// auditLogName is the API server's audit log under the cluster's directory (Config.AuditWrites).
const auditLogName = "audit.log"

// auditPolicy logs, at metadata level and once per request (when the response is complete), every write of
// a service account of the operator namespace, and nothing else.
var auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
  userGroups: ["system:serviceaccounts:` + OperatorNamespace + `"]
- level: None
`

// auditFlags writes the audit policy into dir and returns the API server flags that use it.
func auditFlags(dir string) ([]string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, fmt.Errorf("audit policy: %w", err)
	}
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + filepath.Join(dir, auditLogName),
		"--audit-log-format=json",
		"--audit-log-maxsize=0",
	}, nil
}

// AuditedWrite is one write request of our components as the API server's audit log records it.
type AuditedWrite struct {
	// ServiceAccount is the writer's service account name (its component: compute-domain-controller, ...).
	ServiceAccount string
	// Call is "VERB resource[/subresource]".
	Call string
	// Code is the HTTP status the API server answered.
	Code int
	// At is when the API server received the request.
	At time.Time
}

// auditEvent is the part of an audit.k8s.io/v1 Event the counts read.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// AuditedWrites reads the write requests of our components that the API server received in [from, to) from
// its audit log (Config.AuditWrites; none without it).
func (c *Cluster) AuditedWrites(from, to time.Time) ([]AuditedWrite, error) {
	if !c.cfg.AuditWrites {
		return nil, nil
	}
	f, err := os.Open(filepath.Join(c.dir, auditLogName))
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	prefix := "system:serviceaccount:" + OperatorNamespace + ":"
	var out []AuditedWrite
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("audit log line: %w", err)
		}
		sa, ok := strings.CutPrefix(ev.User.Username, prefix)
		if !ok || ev.RequestReceivedTimestamp.Before(from) || !ev.RequestReceivedTimestamp.Before(to) {
			continue
		}
		w := AuditedWrite{ServiceAccount: sa, Call: strings.ToUpper(ev.Verb), At: ev.RequestReceivedTimestamp}
		if ev.ObjectRef != nil {
			w.Call += " " + ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				w.Call += "/" + ev.ObjectRef.Subresource
			}
		}
		if ev.ResponseStatus != nil {
			w.Code = ev.ResponseStatus.Code
		}
		out = append(out, w)
	}
	return out, sc.Err()
}
