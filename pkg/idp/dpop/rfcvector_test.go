package dpop

import (
	"strings"
	"testing"
	"time"
)

// rfc9449Figure3 is the DPoP proof of RFC 9449 §4.1, Figure 3 (a proof
// to a token endpoint), folded as printed.
const rfc9449Figure3 = `eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6Ik
 VDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZOXpDa0RscEJoRjQyVVFVZldWQVdCR
 nMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JE
 QSIsImNydiI6IlAtMjU2In19.eyJqdGkiOiItQndDM0VTYzZhY2MybFRjIiwiaHRtIj
 oiUE9TVCIsImh0dSI6Imh0dHBzOi8vc2VydmVyLmV4YW1wbGUuY29tL3Rva2VuIiwia
 WF0IjoxNTYyMjYyNjE2fQ.2-GxA6T8lP4vfrg8v-FdWP0A0zdrj8igiMLvqRMUvwnQg
 4PtFLbdLXiOSsX0x7NVY-FNyJK70nfbV37xRZT3Lg`

// rfc9449Figure9JKT is the thumbprint RFC 9449 §6.1 (Figure 9) gives for
// the key of that proof.
const rfc9449Figure9JKT = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"

// The proof RFC 9449 §4.1 prints verifies, at its time, for its request.
func TestVerify_RFC9449_4_1_Example(t *testing.T) {
	proof := strings.Join(strings.Fields(rfc9449Figure3), "")
	v := newTestVerifier(t, Options{Now: func() time.Time { return time.Unix(1562262616, 0) }})
	p, err := v.Verify(ctx, Request{Method: "POST", URL: "https://server.example.com/token", Proofs: []string{proof}})
	if err != nil {
		t.Fatal(err)
	}
	if p.JTI != "-BwC3ESc6acc2lTc" || p.JKT != rfc9449Figure9JKT {
		t.Fatalf("Proof = %+v", p)
	}
}
