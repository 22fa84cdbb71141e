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
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Defaults of Options.
const (
	// DefaultInterval is how often the API server is asked.
	DefaultInterval = 15 * time.Second
	// DefaultGiveUp is how long a refusal must last: client-go reads a token file again every minute, and the
	// kubelet renews a pod's token well before it expires, so a refusal that outlasts two minutes is no
	// renewal under way.
	DefaultGiveUp = 2 * time.Minute
)

// Options tune Watch; zero values take the defaults.
type Options struct {
	Interval time.Duration
	GiveUp   time.Duration
	Clock    clock.WithTicker
}

func (o *Options) defaults() {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.GiveUp <= 0 {
		o.GiveUp = DefaultGiveUp
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
}

// Watch asks the API server who the process is (a SelfSubjectReview, which every authenticated user may
// create) every interval until ctx ends (nil), and returns an error once the API server has refused the
// process's credentials (401 Unauthorized) for at least GiveUp, without an answer in between. Other errors
// (the API server unreachable, overloaded) say nothing of the credentials: they neither count nor end a refusal.
func Watch(ctx context.Context, reviews authenticationv1client.SelfSubjectReviewInterface, o Options) error {
	o.defaults()
	logger := klog.FromContext(ctx)
	ticker := o.Clock.NewTicker(o.Interval)
	defer ticker.Stop()
	var refusedSince time.Time
	for {
		now := o.Clock.Now()
		_, err := reviews.Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		switch {
		case err == nil:
			if !refusedSince.IsZero() {
				logger.Info("The API server accepts this process's credentials again", "refusedFor", now.Sub(refusedSince).Round(time.Second))
			}
			refusedSince = time.Time{}
		case apierrors.IsUnauthorized(err):
			if refusedSince.IsZero() {
				refusedSince = now
				logger.Info("The API server refuses this process's credentials; its pod may be gone", "err", err, "giveUpAfter", o.GiveUp)
			}
			if refused := now.Sub(refusedSince); refused >= o.GiveUp {
				return fmt.Errorf("the API server has refused this process's credentials for %s (its service account token is bound to a pod that is gone, or expired and was not renewed): exiting, so that nothing is served in its name", refused.Round(time.Second))
			}
		case ctx.Err() != nil:
			return nil
		default:
			logger.V(2).Info("Credential check: no answer from the API server", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}
