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

package credentialwatch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

var (
	errRefused     = apierrors.NewUnauthorized("Unauthorized")
	errUnreachable = errors.New("dial tcp 10.96.0.1:443: connect: connection refused")
	errOverloaded  = apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
)

// run answers Watch's reviews with outcomes in turn (nil: an answer; past the outcomes, answers), stepping a
// fake clock one interval after each, and returns how many reviews Watch made before it returned an error (0: it
// did not within the outcomes, and returned nil once its context ended) and that error.
func run(t *testing.T, outcomes []error) (int, error) {
	t.Helper()
	const interval = 15 * time.Second
	clock := clocktesting.NewFakeClock(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC))
	calls := make(chan struct{})
	next := 0
	cs := fake.NewClientset()
	cs.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		var err error
		if next < len(outcomes) {
			err = outcomes[next]
		}
		next++
		calls <- struct{}{}
		return true, &authenticationv1.SelfSubjectReview{}, err
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, cs.AuthenticationV1().SelfSubjectReviews(), Options{Interval: interval, GiveUp: 2 * time.Minute, Clock: clock})
	}()
	for reviews := 0; ; {
		select {
		case <-calls:
			reviews++
			if reviews > len(outcomes) {
				cancel()
				if err := <-done; err != nil {
					t.Fatalf("Watch returned %v when its context ended, want nil", err)
				}
				return 0, nil
			}
			// Watch read the clock before this review: the step counts from its next one.
			clock.Step(interval)
		case err := <-done:
			if err == nil {
				t.Fatalf("Watch returned nil after review %d, before its context ended", reviews)
			}
			return reviews, err
		case <-time.After(10 * time.Second):
			t.Fatal("no review and no return within 10 s")
		}
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

func TestARefusalLastingGiveUpEndsTheWatch(t *testing.T) {
	// Refused at 0 s, 15 s, ... : the refusal has lasted 2 min at the ninth review (120 s).
	n, err := run(t, repeat(errRefused, 12))
	if n != 9 {
		t.Fatalf("Watch returned after review %d, want 9 (a refusal of 2 min)", n)
	}
	if !strings.Contains(err.Error(), "refused this process's credentials for 2m0s") {
		t.Errorf("error %q does not say how long the credentials were refused", err)
	}
}

func TestAnAnswerEndsARefusal(t *testing.T) {
	// Refused for 105 s, answered once, then refused again from 135 s: the second refusal reaches 2 min at 255 s,
	// the eighteenth review.
	outcomes := append(append(repeat(errRefused, 8), nil), repeat(errRefused, 12)...)
	n, err := run(t, outcomes)
	if n != 18 {
		t.Fatalf("Watch returned after review %d (%v), want 18: the answer at 120 s ended the first refusal", n, err)
	}
}

func TestNoAnswerIsNoRefusal(t *testing.T) {
	// An API server that cannot be reached or is errOverloaded says nothing of the credentials.
	outcomes := append(repeat(errUnreachable, 10), repeat(errOverloaded, 10)...)
	if n, err := run(t, outcomes); n != 0 {
		t.Fatalf("Watch returned %v after review %d with no refusal", err, n)
	}
	// Nor does it end one: refused at 0 s, unreachable from 15 s to 90 s, refused again from 105 s: 2 min at 120 s.
	outcomes = append(append(repeat(errRefused, 1), repeat(errUnreachable, 6)...), repeat(errRefused, 6)...)
	if n, _ := run(t, outcomes); n != 9 {
		t.Fatalf("Watch returned after review %d, want 9: an errUnreachable API server does not end a refusal", n)
	}
}

func TestWatchEndsWithItsContext(t *testing.T) {
	if n, err := run(t, repeat(nil, 3)); n != 0 || err != nil {
		t.Fatalf("Watch with answers returned %v after review %d", err, n)
	}
}
