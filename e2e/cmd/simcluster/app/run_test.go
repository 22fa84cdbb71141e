package app

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunRefusesBadInvocations(t *testing.T) {
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"no command":              {args: nil, wantErr: "allowed commands are up, demo"},
		"an unknown command":      {args: []string{"down"}, wantErr: `unknown command "down"`},
		"up without a kubeconfig": {args: []string{"up"}, wantErr: "--kubeconfig is required"},
		"an unknown extra profile": {
			args: []string{"up", "--kubeconfig=/tmp/x", "--extra=tpu:1"}, wantErr: `unknown profile "tpu"`,
		},
		"an unknown DRA driver": {
			args: []string{"up", "--kubeconfig=/tmp/x", "--dra-driver=real"}, wantErr: "allowed values are gpu-plugin, test-driver",
		},
		"an oversized rack": {
			args: []string{"up", "--kubeconfig=/tmp/x", "--nodes-per-rack=19"}, wantErr: "exceeds 18",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := Run(context.Background(), tc.args, &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Run(%q) error = %v, want it to contain %q", tc.args, err, tc.wantErr)
			}
		})
	}
}

func TestHelpPrintsUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), []string{"help"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "simcluster <command>") {
		t.Errorf("help output %q lacks the usage", out.String())
	}
}
