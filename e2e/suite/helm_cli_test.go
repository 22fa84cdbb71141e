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

package suite

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/computedomain-operator/computedomain-operator/e2e/simcluster"
)

// helmCLI runs the pinned helm binary (make's bin/helm) against the cluster
// under test with its own kubeconfig and returns its combined output.
func helmCLI(ctx SpecContext, kubeconfig string, args ...string) (string, error) {
	helm := filepath.Join(env.repoRoot, "bin", "helm")
	cmd := exec.CommandContext(ctx, helm, append(args, "--kubeconfig", kubeconfig)...)
	cmd.Dir = env.repoRoot
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+GinkgoT().TempDir(), "HELM_CONFIG_HOME="+GinkgoT().TempDir(), "HELM_DATA_HOME="+GinkgoT().TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var _ = Describe("The helm CLI against the cluster", func() {
	It("reads the cluster's real Kubernetes version and upgrades the operator's release with --reuse-values, the chart's kubeVersion check passing", func(ctx SpecContext) {
		if _, err := os.Stat(filepath.Join(env.repoRoot, "bin", "helm")); err != nil {
			Fail("the pinned helm CLI is missing (the Makefile installs it as $(HELM)): " + err.Error())
		}
		want, err := simcluster.KubernetesVersion()
		Expect(err).NotTo(HaveOccurred())

		By("reading /version as kubectl version does")
		info, err := env.client.Discovery().ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		Expect(info.GitVersion).To(Equal(want), "the API server reports the k8s.io/kubernetes version it is built from")
		Expect(info.Major + "." + info.Minor).To(Equal(strings.Join(strings.Split(strings.TrimPrefix(want, "v"), ".")[:2], ".")))

		kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
		Expect(simcluster.WriteKubeconfig(env.restConfig, kubeconfig)).To(Succeed())

		By("helm upgrade " + simcluster.ReleaseName + " " + simcluster.ChartPath + " --reuse-values")
		out, err := helmCLI(ctx, kubeconfig, "upgrade", simcluster.ReleaseName, simcluster.ChartPath,
			"-n", simcluster.OperatorNamespace, "--reuse-values")
		Expect(err).NotTo(HaveOccurred(), "helm upgrade:\n%s", out)
		Expect(out).To(ContainSubstring("has been upgraded"))

		By("helm status shows the new revision deployed")
		out, err = helmCLI(ctx, kubeconfig, "status", simcluster.ReleaseName, "-n", simcluster.OperatorNamespace)
		Expect(err).NotTo(HaveOccurred(), "helm status:\n%s", out)
		Expect(out).To(ContainSubstring("STATUS: deployed"))

		By("the upgraded operator still prepares a new GPU claim")
		ns := newNamespace(ctx)
		createFixture(ctx, ns, "demo/gpu-claim.yaml")
		runningPod(ctx, ns, "gpu-pod")
	})
})
