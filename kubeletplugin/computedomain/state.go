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

package computedomain

import "github.com/computedomain-operator/computedomain-operator/internal/checkpoint"

// saveClaim records one claim's state and keeps the claims gauge in step.
// Callers hold d.mu.
func (d *Driver) saveClaim(uid string, cs checkpoint.ClaimState) error {
	if err := d.ledger.SaveClaim(uid, cs); err != nil {
		return err
	}
	d.metrics.setClaims(d.ledger.Claims())
	return nil
}

// deleteClaim forgets one claim and keeps the claims gauge in step. Callers
// hold d.mu.
func (d *Driver) deleteClaim(uid string) error {
	if err := d.ledger.DeleteClaim(uid); err != nil {
		return err
	}
	d.metrics.setClaims(d.ledger.Claims())
	return nil
}
