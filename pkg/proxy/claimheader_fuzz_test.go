package proxy

import (
	"encoding/json"
	"mime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// FuzzClaimHeaderValue checks that a claim header gives the upstream the
// claim's values exactly: the value is one HTTP carries unchanged
// (printable ASCII, no leading or trailing space or tab), and splitting it
// on "," and decoding each element (an encoded-word whole, anything else
// as it is) gives back the values ClaimValues reads, in order.
func FuzzClaimHeaderValue(f *testing.F) {
	for _, s := range []string{`"t1"`, `" alice"`, `["a","b,c",""]`, `[1.50,true,"x"]`, `"=?UTF-8?B?YQ==?="`, `"ü"`, `"a\r\nX: y"`, `["\"q\""]`, `{"a":1}`, `[]`, `"\t"`} {
		f.Add(s)
	}
	path, err := idp.ParseClaimPath("c")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, claim string) {
		if !json.Valid([]byte(claim)) || !utf8.ValidString(claim) {
			return // the verifier refuses such a payload
		}
		p := &idp.TokenPayload{Raw: json.RawMessage(`{"c":` + claim + `}`)}
		got := claimHeaderValue(p, path)
		vals, err := p.ClaimValues(path)
		if err != nil || len(vals) == 0 {
			if got != "" {
				t.Fatalf("claim %s (%v, %d values): header %q, want none", claim, err, len(vals), got)
			}
			return
		}
		if got == "" || got[0] == ' ' || got[0] == '\t' || got[len(got)-1] == ' ' || got[len(got)-1] == '\t' {
			t.Fatalf("claim %s: header %q would be trimmed or dropped", claim, got)
		}
		for i := 0; i < len(got); i++ {
			if c := got[i]; c < 0x20 || c >= 0x7f {
				t.Fatalf("claim %s: header %q holds byte %#x", claim, got, c)
			}
		}
		parts := strings.Split(got, ",")
		if len(parts) != len(vals) {
			t.Fatalf("claim %s: header %q splits into %d, want %d values", claim, got, len(parts), len(vals))
		}
		var dec mime.WordDecoder
		for i, part := range parts {
			v := part
			if strings.HasPrefix(part, "=?") {
				if v, err = dec.Decode(part); err != nil {
					t.Fatalf("claim %s: element %q does not decode: %v", claim, part, err)
				}
			}
			if v != vals[i].Text {
				t.Fatalf("claim %s: element %d reads %q, want %q (header %q)", claim, i, v, vals[i].Text, got)
			}
		}
	})
}
