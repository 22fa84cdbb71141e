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

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	apiv1beta1 "github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// removeOrphanConfigDirs removes, at start, the IMEX config directory of every domain that no daemon claim in
// the checkpoint holds. The directories live on the host and survive a reboot; the checkpoint of an earlier
// boot is discarded, so without this a domain's IMEX config (its peers' addresses) would stay on the node
// forever once its daemon claim was never unprepared here. A daemon claim prepared again creates its
// directory anew.
func (s *nodeState) removeOrphanConfigDirs(ctx context.Context) error {
	entries, err := os.ReadDir(s.cfg.DomainConfigRoot)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list IMEX config directories: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || s.domainHasClaims(types.UID(e.Name()), apiv1beta1.DeviceTypeDaemon) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.cfg.DomainConfigRoot, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("remove IMEX config directory of domain %s: %w", e.Name(), err))
			continue
		}
		s.crash.At("startup-config-dir-removed")
		klog.FromContext(ctx).Info("Removed the IMEX config directory of a domain with no daemon claim on this node", "domainUID", e.Name())
	}
	return errors.Join(errs...)
}
