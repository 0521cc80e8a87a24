package proxy

import (
	"net/http"
	"slices"
	"strings"
)

// registeredMethods are the methods of IANA's HTTP Method Registry
// (https://www.iana.org/assignments/http-methods), without PRI (HTTP/2's
// connection preface, never a request). A rule may name one of them, or
// one of Config.ExtensionMethods.
var registeredMethods = []string{
	"ACL", "BASELINE-CONTROL", "BIND", "CHECKIN", "CHECKOUT", "CONNECT", "COPY",
	"DELETE", "GET", "HEAD", "LABEL", "LINK", "LOCK", "MERGE", "MKACTIVITY",
	"MKCALENDAR", "MKCOL", "MKREDIRECTREF", "MKWORKSPACE", "MOVE", "OPTIONS",
	"ORDERPATCH", "PATCH", "POST", "PROPFIND", "PROPPATCH", "PUT", "QUERY",
	"REBIND", "REPORT", "SEARCH", "TRACE", "UNBIND", "UNCHECKOUT", "UNLINK",
	"UNLOCK", "UPDATE", "UPDATEREDIRECTREF", "VERSION-CONTROL",
}

// checkMethods refuses extension methods that are not upper-case tokens,
// and rules whose method is neither registered nor an extension method:
// a misspelt method (GETT, FETCH) would silently leave the requests it
// meant to the default policy.
func checkMethods(routes []RouteConfig, extension []string) []error {
	var errs []error
	for i, m := range extension {
		switch {
		case !isToken(m) || !upperCase(m):
			errs = append(errs, fieldErrorf(fields("ExtensionMethods"), "%s %q: methods are case-sensitive upper-case tokens", named("ExtensionMethods[%d]", i), m))
		case m == http.MethodConnect || m == http.MethodTrace:
			errs = append(errs, fieldErrorf(fields("ExtensionMethods"), "%s %s is always refused by the proxy (405)", named("ExtensionMethods[%d]", i), m))
		}
	}
	for i, rc := range routes {
		method, _, ok := strings.Cut(strings.TrimSpace(rc.Match), " ")
		if !ok || strings.Contains(method, "/") || !isToken(method) || !upperCase(method) {
			continue // no method, or one neverMatches explains
		}
		if slices.Contains(registeredMethods, method) || slices.Contains(extension, method) {
			continue
		}
		errs = append(errs, fieldErrorf(fields("Routes", "ExtensionMethods"),
			"%s %q: method %s is not a registered HTTP method (a typo?); a method of your own must be listed under %s",
			named("Routes[%d]", i), rc.Match, method, named("ExtensionMethods")))
	}
	return errs
}
