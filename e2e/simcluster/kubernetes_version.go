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
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	_ "unsafe" // go:linkname

	"k8s.io/apimachinery/pkg/util/version"
	_ "k8s.io/component-base/version" // the variables below are its build stamp
)

// The build stamp of k8s.io/component-base/version, which a release build of
// kube-apiserver sets with -ldflags -X (hack/lib/version.sh). The simulated
// components run in this process, built without those flags, so /version
// said v0.0.0-master+$Format:%H$ and version-checking clients (kubectl
// version, helm's kubeVersion) refused the cluster. stampKubernetesVersion
// sets them at run time to the k8s.io/kubernetes version the process is
// built from, which is what the components are.
var (
	//go:linkname gitVersion k8s.io/component-base/version.gitVersion
	gitVersion string
	//go:linkname gitMajor k8s.io/component-base/version.gitMajor
	gitMajor string
	//go:linkname gitMinor k8s.io/component-base/version.gitMinor
	gitMinor string
	//go:linkname gitTreeState k8s.io/component-base/version.gitTreeState
	gitTreeState string
	// dynamicGitVersion is what version.Get reports; it is initialized
	// from gitVersion when the package loads.
	//go:linkname dynamicGitVersion k8s.io/component-base/version.dynamicGitVersion
	dynamicGitVersion atomic.Value
)

var stampOnce = sync.OnceValue(func() error {
	v, err := KubernetesVersion()
	if err != nil {
		return err
	}
	parsed, err := version.ParseSemantic(v)
	if err != nil {
		return fmt.Errorf("kubernetes version %q: %w", v, err)
	}
	gitVersion = v
	gitMajor = fmt.Sprint(parsed.Major())
	gitMinor = fmt.Sprint(parsed.Minor())
	gitTreeState = "clean"
	dynamicGitVersion.Store(v)
	return nil
})

// stampKubernetesVersion makes the in-process components report the
// k8s.io/kubernetes version they are built from (v1.37.2) on /version and in
// their logs, as a release build does. It is idempotent.
func stampKubernetesVersion() error {
	if err := stampOnce(); err != nil {
		return fmt.Errorf("stamp the kubernetes version: %w", err)
	}
	return nil
}

// unstamped reports whether s is the placeholder of a build without the
// release stamp.
func unstamped(s string) bool { return strings.HasPrefix(s, "v0.0.0-master") }
