package proxy

import (
	"fmt"
	"slices"
	"strings"
)

// checkIssuerNames reports a rule's issuers list that names an issuer
// not configured, or one twice, as a *FieldError of Routes[i].Issuers
// with a hint: the names configured, and the closest one; match is the
// rule's.
func checkIssuerNames(i int, match string, names, known []string) error {
	field := fmt.Sprintf("Routes[%d].Issuers", i)
	bad := func(format string, args ...any) error {
		return fieldErrorf(fields(field), "%s %q: %s: "+format, append([]any{named("Routes[%d]", i), match, leaf("%s", field)}, args...)...)
	}
	for j, n := range names {
		if slices.Contains(names[:j], n) {
			return bad("%q is listed twice", n)
		}
		if slices.Contains(known, n) {
			continue
		}
		hint := ""
		for _, k := range known {
			if strings.EqualFold(k, n) || strings.Contains(k, n) || strings.Contains(n, k) {
				hint = fmt.Sprintf(" (did you mean %q?)", k)
				break
			}
		}
		return bad("unknown issuer %q%s; the trusted issuers are %s (%s and the names of %s)",
			n, hint, strings.Join(known, ", "), named("IDP.IssuerName"), named("IDP.Issuers"))
	}
	return nil
}
