package proxy

import "github.com/idp-proxy/idp-proxy/internal/fielderr"

// FieldError is a configuration problem of one field, named by its Go
// path from the Config given to Compile or New ("Upstream.URL",
// "Routes[2].CORS.AllowedOrigins[0]", a map entry as
// "Headers.Claims[X-Tenant]"), or from the idp.Config given with it,
// under IDP ("IDP.AuthPrefix"). Match it with errors.As: Field, Also (the
// other fields it concerns), Missing (required and not set) and Reason
// (what is wrong, naming fields by their Go paths) let a program point at
// the setting without reading the message, and ReasonNaming words the
// reason with the program's own names for the fields (idp-proxy's file
// keys). Error() is "proxy: " and the reason.
type FieldError = fielderr.Error

// fieldErrorf returns the problem of the fields (the first at fault, the
// others concerned); format's fielderr.Ref arguments (named, leaf) name fields.
func fieldErrorf(fields []string, format string, args ...any) error {
	return fielderr.New("proxy: ", nil, false, fields[0], fields[1:], format, args...)
}

// missingFieldf is fieldErrorf for a required field that is not set.
func missingFieldf(fields []string, format string, args ...any) error {
	return fielderr.New("proxy: ", nil, true, fields[0], fields[1:], format, args...)
}

// fields is fieldErrorf's list of Go paths, for readability at the call
// sites.
func fields(path ...string) []string { return path }

// named names the field at a Go path in a message; leaf names only the
// path's last element, where the message has named the rest.
var (
	named = fielderr.F
	leaf  = fielderr.L
)
