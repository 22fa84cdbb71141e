package draplugin

import (
	"context"
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/computedomain-operator/computedomain-operator/internal/checkpoint"
)

// ClaimGetter reads a ResourceClaim (ClaimClient in production).
type ClaimGetter interface {
	GetResourceClaim(ctx context.Context, namespace, name string) (*resourceapi.ResourceClaim, error)
}

// CleanupStaleClaims calls cleanup for every claim in claims (a snapshot of
// the checkpoint's) whose ResourceClaim no longer exists or was recreated
// under the same name with a new UID: the kubelet will never unprepare those.
// cleanup reports whether it undid anything (false: the claim was gone
// already). Claims whose ResourceClaim cannot be read are kept; every error is
// returned, joined, after all claims were tried.
func CleanupStaleClaims(ctx context.Context, getter ClaimGetter, claims map[string]checkpoint.ClaimState, cleanup func(ctx context.Context, uid string) (bool, error)) error {
	var errs []error
	for uid, cs := range claims {
		claim, err := getter.GetResourceClaim(ctx, cs.Namespace, cs.Name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("get claim %s/%s: %w", cs.Namespace, cs.Name, err))
			continue
		case claim.UID != types.UID(uid):
		default:
			continue // still there
		}
		cleaned, err := cleanup(ctx, uid)
		if err != nil {
			errs = append(errs, fmt.Errorf("clean up claim %s: %w", uid, err))
			continue
		}
		if cleaned {
			klog.FromContext(ctx).Info("Cleaned up a claim whose ResourceClaim is gone", "claim", klog.KRef(cs.Namespace, cs.Name), "claimUID", uid)
		}
	}
	return errors.Join(errs...)
}
