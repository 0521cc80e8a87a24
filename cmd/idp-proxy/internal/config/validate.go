package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// validate reports the problems of the program's own sections, and the
// idp section's spellings that idp.Config does not see. Every error is
// prefixed "proxy: " and names its key.
func (f File) validate() error {
	var errs []error
	bad := func(k []string, format string, args ...any) {
		errs = append(errs, keyErrorf(k, format, args...))
	}
	missing := func(k []string, format string, args ...any) {
		errs = append(errs, missingKeyf(k, format, args...))
	}
	if err := checkAddr(f.Listen); err != nil {
		bad(keys("listen"), "listen %q: %v", f.Listen, err)
	}
	if f.MetricsListen != "" {
		if err := checkAddr(f.MetricsListen); err != nil {
			bad(keys("metrics_listen"), "metrics_listen %q: %v, or \"\" to disable", f.MetricsListen, err)
		} else if _, port, _ := net.SplitHostPort(f.Listen); f.MetricsListen == f.Listen && port != "0" {
			bad(keys("metrics_listen", "listen"), "metrics_listen must differ from listen (%s)", f.Listen)
		}
	}
	if err := f.IDP.issuerFormProblem(); err != nil {
		errs = append(errs, err)
	}
	switch strings.ToLower(f.IDP.TokenLocation) {
	case "header", "cookie":
	default:
		bad(keys("idp.token_location"), "idp.token_location %q: want header or cookie", f.IDP.TokenLocation)
	}
	if f.IDP.ClientSecret != "" && f.IDP.ClientSecretFile != "" {
		bad(keys("idp.client_secret", "idp.client_secret_file"), "idp.client_secret and idp.client_secret_file are exclusive: set one")
	}
	if f.IDP.SessionSecret != "" && f.IDP.SessionSecretFile != "" {
		bad(keys("idp.session_secret", "idp.session_secret_file"), "idp.session_secret and idp.session_secret_file are exclusive: set one")
	}
	if f.IDP.Leeway < 0 {
		bad(keys("idp.leeway"), "idp.leeway must not be negative, got %s", f.IDP.Leeway)
	}
	if f.IDP.VerifiedCacheSize < 0 {
		bad(keys("idp.verified_cache_size"), "idp.verified_cache_size must not be negative (idp.verified_cache: false turns the cache off), got %d", f.IDP.VerifiedCacheSize)
	}
	if (f.TLS.CertFile == "") != (f.TLS.KeyFile == "") {
		bad(keys("tls.cert_file", "tls.key_file"), "tls.cert_file and tls.key_file go together: set both or neither")
	}
	f.validateACME(bad, missing)
	f.TLS.validateClientAuth(bad, missing)
	f.IDP.Claims.validate(bad)
	f.IDP.DPoP.validate(bad)
	f.Session.validate(bad, missing)
	f.ForwardAuth.validate(bad)
	f.Tracing.validate(bad)
	if _, err := f.TLS.MinTLSVersion(); err != nil {
		errs = append(errs, &KeyError{Key: "tls.min_version", Err: fmt.Errorf("proxy: %w", err)})
	}
	switch strings.ToLower(f.Log.Format) {
	case "json", "text":
	default:
		bad(keys("log.format"), "log.format %q: want json or text", f.Log.Format)
	}
	switch strings.ToLower(f.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		bad(keys("log.level"), "log.level %q: want debug, info, warn or error", f.Log.Level)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"server.read_header_timeout", f.Server.ReadHeaderTimeout},
		{"server.read_timeout", f.Server.ReadTimeout},
		{"server.write_timeout", f.Server.WriteTimeout},
		{"server.idle_timeout", f.Server.IdleTimeout},
		{"server.shutdown_timeout", f.Server.ShutdownTimeout},
		{"server.drain_delay", f.Server.DrainDelay},
	} {
		if d.v < 0 {
			bad(keys(d.name), "%s must not be negative, got %s", d.name, d.v)
		}
	}
	if f.Server.MaxHeaderBytes < 0 {
		bad(keys("server.max_header_bytes"), "server.max_header_bytes must not be negative, got %d", f.Server.MaxHeaderBytes)
	}
	return errors.Join(errs...)
}

// issuerFormProblem reports an idp section that names its provider in both
// forms (issuer_url, and the Keycloak shorthand server_url and realm) or in
// neither, as a *KeyError naming the keys.
func (c IDP) issuerFormProblem() error {
	switch {
	case c.IssuerURL != "" && (c.ServerURL != "" || c.Realm != ""):
		return keyErrorf(keys("idp.issuer_url", "idp.server_url", "idp.realm"),
			"idp.issuer_url excludes idp.server_url and idp.realm: set idp.issuer_url (any OpenID Connect provider) or idp.server_url and idp.realm (a Keycloak realm), not both")
	case c.IssuerURL == "" && c.ServerURL == "" && c.Realm == "":
		return missingKeyf(keys("idp.issuer_url", "idp.server_url", "idp.realm"),
			"idp.issuer_url, or idp.server_url and idp.realm (a Keycloak realm), is required")
	}
	return nil
}

// withoutIssuerFormProblem returns ic for the checks of idp.Config, which
// would report issuerFormProblem's problem again, in its own words: with
// that problem, the form the library would complain about is removed (both
// forms: the shorthand; neither: a placeholder issuer), so that every other
// problem is still reported, once.
func (c IDP) withoutIssuerFormProblem(ic idp.Config) idp.Config {
	switch {
	case c.issuerFormProblem() == nil:
	case c.IssuerURL != "":
		ic.ServerURL, ic.Realm = "", ""
	default:
		ic.IssuerURL = "https://issuer.invalid"
	}
	return ic
}

// checkAddr checks a listen address: host:port with a port of 0 (any
// free port) to 65535, or a service name.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port (%v)", err)
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 0 || n > 65535 {
			return fmt.Errorf("port %d is not a TCP port (0-65535)", n)
		}
		return nil
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q is not a number or a known service", port)
	}
	return nil
}
