//go:build deps

// Package hack pins the product module's direct dependencies before the code that uses them lands.
package hack

import (
	_ "github.com/NVIDIA/go-nvml/pkg/nvml"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "k8s.io/api/resource/v1"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/dynamic-resource-allocation/kubeletplugin"
	_ "k8s.io/dynamic-resource-allocation/structured"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "sigs.k8s.io/yaml"
	_ "tags.cncf.io/container-device-interface/pkg/cdi"
)
