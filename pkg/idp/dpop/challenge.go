package dpop

import (
	"errors"
	"strings"
)

// Challenge returns the value of a WWW-Authenticate challenge of the DPoP
// scheme (RFC 9449 §7.1) for err: the error code and reason of an
// *Error, and algs, the accepted algorithms. A nil err (no proof, no
// token) or an error that is not an *Error gives the challenge without
// error parameters. Other schemes' challenges (Bearer, where bearer
// tokens are accepted too) are the caller's to add.
func (v *Verifier) Challenge(err error) string {
	var b strings.Builder
	b.WriteString("DPoP")
	sep := " "
	var e *Error
	if errors.As(err, &e) {
		b.WriteString(` error="` + e.Code + `", error_description="` + quotable(e.Reason) + `"`)
		sep = ", "
	}
	b.WriteString(sep + `algs="` + strings.Join(v.o.Algorithms, " ") + `"`)
	return b.String()
}

// quotable drops what may not stand in a quoted-string of an
// error_description (RFC 6749 §5.2: printable ASCII but '"' and '\').
// Reasons are this package's constants and need none of it; the check
// keeps a future reason from breaking the header.
func quotable(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return strings.Map(func(r rune) rune {
				if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
					return -1
				}
				return r
			}, s)
		}
	}
	return s
}
