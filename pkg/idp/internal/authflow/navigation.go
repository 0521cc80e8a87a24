package authflow

import (
	"net/http"
	"strings"
)

// IsNavigation is idp.IsNavigation: it reports whether r is a browser navigating to a page (as
// opposed to an API call or a script's request): GET or HEAD, Accept
// naming text/html, no Authorization header, and neither Sec-Fetch-Mode
// of a script (cors, no-cors, same-origin) nor X-Requested-With. With
// browser sessions, such a request without credentials is sent to the
// login route; every other one gets 401.
func IsNavigation(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	h := r.Header
	if _, ok := h["Authorization"]; ok || h.Get("X-Requested-With") != "" {
		return false
	}
	switch h.Get("Sec-Fetch-Mode") {
	case "", "navigate", "nested-navigate":
	default:
		return false
	}
	for _, a := range h.Values("Accept") {
		for part := range strings.SplitSeq(a, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/html") {
				return true
			}
		}
	}
	return false
}
