package draplugin

import "testing"

func TestCrashHookPanicsOnlyWhereItSays(t *testing.T) {
	cases := map[string]struct {
		hook      CrashHook
		wantPanic bool
	}{
		"a production plugin has no hook":  {hook: nil},
		"the hook names another point":     {hook: func(p string) bool { return p == "other" }},
		"the hook names this point: crash": {hook: func(p string) bool { return p == "cdi-written" }, wantPanic: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got any
			func() {
				defer func() { got = recover() }()
				tc.hook.At("cdi-written")
			}()
			if tc.wantPanic && got != ErrSimulatedCrash { //nolint:errorlint // the panic value itself, never wrapped
				t.Errorf("recovered %v, want %v", got, ErrSimulatedCrash)
			}
			if !tc.wantPanic && got != nil {
				t.Errorf("panicked with %v", got)
			}
		})
	}
}
