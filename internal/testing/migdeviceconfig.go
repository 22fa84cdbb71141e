package testing

import (
	"github.com/computedomain-operator/computedomain-operator/api/v1beta1"
)

// MigDeviceConfigWrapper builds a MigDeviceConfig.
type MigDeviceConfigWrapper struct{ v1beta1.MigDeviceConfig }

// MakeMigDeviceConfig starts a MigDeviceConfig without sharing.
func MakeMigDeviceConfig() *MigDeviceConfigWrapper {
	return &MigDeviceConfigWrapper{*v1beta1.DefaultMigDeviceConfig()}
}

// Obj returns the built MigDeviceConfig.
func (w *MigDeviceConfigWrapper) Obj() *v1beta1.MigDeviceConfig { return &w.MigDeviceConfig }

// Strategy sets the sharing strategy, keeping any mpsConfig already set.
func (w *MigDeviceConfigWrapper) Strategy(s v1beta1.SharingStrategy) *MigDeviceConfigWrapper {
	if w.Sharing == nil {
		w.Sharing = &v1beta1.MigDeviceSharing{}
	}
	w.Sharing.Strategy = s
	return w
}

// MPS sets the MPS strategy with mps (nil leaves mpsConfig unset).
func (w *MigDeviceConfigWrapper) MPS(mps *v1beta1.MpsConfig) *MigDeviceConfigWrapper {
	w.Sharing = &v1beta1.MigDeviceSharing{Strategy: v1beta1.MpsStrategy, MpsConfig: mps}
	return w
}

// MpsConfig sets sharing.mpsConfig whatever the strategy.
func (w *MigDeviceConfigWrapper) MpsConfig(c *v1beta1.MpsConfig) *MigDeviceConfigWrapper {
	if w.Sharing == nil {
		w.Sharing = &v1beta1.MigDeviceSharing{}
	}
	w.Sharing.MpsConfig = c
	return w
}
