package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

const (
	// GroupName is the API group of every kind in this package.
	GroupName = "resource.nvidia.com"
	// Version is the API version of every kind in this package.
	Version = "v1beta1"
)

var (
	// GroupVersion is the group and version of the kinds in this package.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

	// SchemeBuilder registers the custom resources of this package (ComputeDomain and its list).
	// The opaque device configuration kinds are not custom resources; DecodeConfig knows them.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the custom resources of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
