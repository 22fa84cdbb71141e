package draplugin

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
)

type failingGetter struct{}

func (failingGetter) GetResourceClaim(context.Context, string, string) (*resourceapi.ResourceClaim, error) {
	return nil, errors.New("apiserver unavailable")
}

func TestCleanupStaleClaims(t *testing.T) {
	claims := map[string]checkpoint.ClaimState{
		"uid-live":      {Namespace: "ns", Name: "live"},
		"uid-deleted":   {Namespace: "ns", Name: "deleted"},
		"uid-recreated": {Namespace: "ns", Name: "recreated"},
	}
	existing := []*resourceapi.ResourceClaim{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "live", UID: "uid-live"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "recreated", UID: "uid-new"}},
	}
	cases := map[string]struct {
		getter      ClaimGetter
		cleanupErr  error
		wantCleaned []string
		wantErr     string
	}{
		"claims that are gone or recreated are cleaned up, a live one is kept": {
			getter:      ClaimClient{Client: fake.NewClientset(existing[0], existing[1])},
			wantCleaned: []string{"uid-deleted", "uid-recreated"},
		},
		"claims whose ResourceClaim cannot be read are kept": {
			getter:  failingGetter{},
			wantErr: "apiserver unavailable",
		},
		"a failed clean-up is reported and the others still run": {
			getter:      ClaimClient{Client: fake.NewClientset(existing[0], existing[1])},
			cleanupErr:  errors.New("disk full"),
			wantCleaned: []string{"uid-deleted", "uid-recreated"},
			wantErr:     "disk full",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var cleaned []string
			err := CleanupStaleClaims(context.Background(), tc.getter, claims, func(_ context.Context, uid string) (bool, error) {
				cleaned = append(cleaned, uid)
				return true, tc.cleanupErr
			})
			slices.Sort(cleaned)
			if diff := cmp.Diff(tc.wantCleaned, cleaned); diff != "" {
				t.Errorf("cleaned claims (-want +got):\n%s", diff)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
