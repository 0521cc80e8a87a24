package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestVersionFlagAndCommand(t *testing.T) {
	outputs := make([]string, 0, 2)
	for _, args := range [][]string{{"--version"}, {"version"}} {
		cmd := NewRootCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		outputs = append(outputs, out.String())
	}
	if !strings.HasPrefix(outputs[0], "shortener ") || outputs[0] != outputs[1] {
		t.Fatalf("--version %q, version %q", outputs[0], outputs[1])
	}
}
