package draplugin

import "errors"

// ErrSimulatedCrash is what a CrashHook panics with.
var ErrSimulatedCrash = errors.New("simulated crash")

// CrashHook is asked (in tests) at the named points of a prepare whether the
// process crashes there. Production plugins leave it nil.
type CrashHook func(point string) bool

// At panics with ErrSimulatedCrash, as a crash would stop the call, when the
// hook says so; a nil hook never does.
func (h CrashHook) At(point string) {
	if h != nil && h(point) {
		panic(ErrSimulatedCrash)
	}
}
