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
