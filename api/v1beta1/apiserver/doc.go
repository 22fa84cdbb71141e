// Package apiserver holds the API tests of resource.nvidia.com/v1beta1: a Ginkgo suite that installs the
// generated CRD into a real kube-apiserver (envtest) and checks what the server accepts, rejects and
// defaults. It has no non-test code.
package apiserver
