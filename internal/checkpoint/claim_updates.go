package checkpoint

import "fmt"

// SaveClaim stores cur with one claim's state set and returns the new
// checkpoint; cur itself is left as it was, so a caller keeps its in-memory
// state unchanged unless the file was written.
func (s *Store) SaveClaim(cur Checkpoint, uid string, cs ClaimState) (Checkpoint, error) {
	next := cur.Clone()
	next.Claims[uid] = cs
	if err := s.Save(next); err != nil {
		return cur, fmt.Errorf("save checkpoint: %w", err)
	}
	return next, nil
}

// DeleteClaim stores cur without one claim and returns the new checkpoint;
// a claim cur does not hold writes nothing. cur is left as it was.
func (s *Store) DeleteClaim(cur Checkpoint, uid string) (Checkpoint, error) {
	if _, ok := cur.Claims[uid]; !ok {
		return cur, nil
	}
	next := cur.Clone()
	delete(next.Claims, uid)
	if err := s.Save(next); err != nil {
		return cur, fmt.Errorf("save checkpoint: %w", err)
	}
	return next, nil
}
