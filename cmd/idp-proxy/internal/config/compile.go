package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

// Compiled is a checked configuration, ready to serve: what Compile makes
// of a File, once, for serve (at start and at every reload) and
// check-config alike.
type Compiled struct {
	// File is the configuration as loaded; serve reads its listeners,
	// TLS, server limits and logging.
	File File
	// IDP is the plugin configuration, secret files read. Logger,
	// HTTPClient and the Redis session backend are left to the caller.
	IDP idp.Config
	// Proxy holds the proxy's rules compiled against IDP, for
	// proxy.NewCompiled; Proxy.Table() is the rule table check-config
	// prints.
	Proxy *proxy.Compiled
	// Deprecated are the former spellings the file uses, each with the
	// one to use instead, for serve to log and check-config to print.
	Deprecated []string
}

// CompileOptions adjust Compile.
type CompileOptions struct {
	// NoSecrets checks a file whose secrets are not available here (they
	// come from the environment or from files mounted at deploy time):
	// secret files are not read and missing secrets are not errors; every
	// other check runs. Such a Compiled is for printing, not for serving.
	NoSecrets bool
}

// Compile validates the whole file without contacting anything (the
// program's sections, the idp section with idp.Config.Validate, the
// proxy's with proxy.Compile, which compiles the rules), reading each
// secret file once. The error lists every problem found, one per line;
// those of one setting are *KeyError values, and name the environment
// variable a value came from.
func Compile(f File, o CompileOptions) (*Compiled, error) {
	checked := f.withDefaults()
	var errs []error
	if err := checked.validate(); err != nil {
		errs = append(errs, err)
	}
	ic, err := checked.pluginConfig(o.NoSecrets)
	if err != nil {
		errs = append(errs, err)
	}
	if !o.NoSecrets {
		if err := checked.TLS.clientCAProblem(); err != nil {
			errs = append(errs, err)
		}
	}
	if !checked.IDP.Claims.valid() {
		ic.Claims = idp.ClaimMapping{} // reported under its keys above, not again by pkg/idp
	}
	pc, err := proxy.Compile(checked.Proxy(), checked.IDP.withoutIssuerFormProblem(ic))
	if err != nil {
		errs = append(errs, err)
	}
	if err := f.blameEnvironment(f.locate(errors.Join(f.explain(errs)...))); err != nil {
		return nil, err
	}
	return &Compiled{File: f, IDP: ic, Proxy: pc, Deprecated: f.deprecated()}, nil
}

// deprecated lists the former spellings f uses (see Compiled.Deprecated).
func (f File) deprecated() []string {
	var out []string
	if f.IDP.VerifiedCacheSize == 0 {
		out = append(out, "idp.verified_cache_size: 0 is deprecated: write idp.verified_cache: false to turn the verified-token cache off")
	}
	return out
}

// Check is Compile returning the rule table only.
func (f File) Check() (string, error) {
	c, err := Compile(f, CompileOptions{})
	if err != nil {
		return "", err
	}
	return c.Proxy.Table(), nil
}

// withDefaults gives the zero settings of the program's own sections
// their defaults (see the package documentation, "Zero"): a File built in
// Go or a zero written in the file. pkg/idp and pkg/proxy default theirs.
func (f File) withDefaults() File {
	d := Default()
	setStr := func(p *string, def string) {
		if *p == "" {
			*p = def
		}
	}
	setDur := func(p *time.Duration, def time.Duration) {
		if *p == 0 {
			*p = def
		}
	}
	setStr(&f.Listen, d.Listen)
	setDur(&f.Server.ReadHeaderTimeout, d.Server.ReadHeaderTimeout)
	setDur(&f.Server.ReadTimeout, d.Server.ReadTimeout)
	setDur(&f.Server.WriteTimeout, d.Server.WriteTimeout)
	setDur(&f.Server.IdleTimeout, d.Server.IdleTimeout)
	setDur(&f.Server.ShutdownTimeout, d.Server.ShutdownTimeout)
	if f.Server.MaxHeaderBytes == 0 {
		f.Server.MaxHeaderBytes = d.Server.MaxHeaderBytes
	}
	setStr(&f.Log.Format, d.Log.Format)
	setStr(&f.Log.Level, d.Log.Level)
	setStr(&f.TLS.ACME.DirectoryURL, d.TLS.ACME.DirectoryURL)
	setStr(&f.TLS.ACME.Cache, d.TLS.ACME.Cache)
	return f
}

// Proxy returns the proxy's part of the file.
func (f File) Proxy() proxy.Config {
	return proxy.Config{
		Upstream:      f.Upstream,
		Upstreams:     f.Upstreams,
		Routes:        f.Routes,
		DefaultPolicy: f.DefaultPolicy,
		Headers:       f.Headers,

		ExtensionMethods: f.ExtensionMethods,
		MaxBodyBytes:     f.Server.MaxBodyBytes,

		SkipAuthPreflight: f.SkipAuthPreflight,
		Assertion:         f.Assertion,
		ForwardAuth:       proxy.ForwardAuthConfig{Enabled: f.ForwardAuth.Enabled, TrustedCIDRs: f.ForwardAuth.TrustedCIDRs},
		ClientCert:        f.ClientCert,
	}
}

// PluginConfig translates the idp section alone into an idp.Config,
// reading the secret files, for the commands that need no rules (token,
// verify). Logger, HTTPClient and the other Go-only fields are left for
// the caller.
func (f File) PluginConfig() (idp.Config, error) {
	ic, err := f.pluginConfig(false)
	if err != nil {
		return idp.Config{}, err
	}
	return ic, nil
}

// PluginConfigWithoutSecrets is PluginConfig for verify, which checks
// tokens and never uses a secret: secret files are not read, missing
// secrets are not errors, and stand-ins take the secrets' places (see
// CompileOptions.NoSecrets).
func (f File) PluginConfigWithoutSecrets() (idp.Config, error) {
	return f.pluginConfigReading(false, false)
}

// PluginConfigClientOnly is PluginConfig for token, which authenticates
// as the client and keeps no session: the client secret is read, the
// session secrets are not (stand-ins take their places).
func (f File) PluginConfigClientOnly() (idp.Config, error) {
	return f.pluginConfigReading(true, false)
}

// placeholderSecret stands for a secret that CompileOptions.NoSecrets
// does not read.
const placeholderSecret = "(not checked: --no-secrets) 32+ bytes stand-in"

func (f File) pluginConfig(noSecrets bool) (idp.Config, error) {
	return f.pluginConfigReading(!noSecrets, !noSecrets)
}

// pluginConfigReading translates the idp section, reading the client
// secret and the session secrets only when asked; an unread secret is a
// stand-in (see CompileOptions.NoSecrets).
func (f File) pluginConfigReading(client, sessions bool) (idp.Config, error) {
	c := f.IDP
	var secret, session string
	// A secret file that cannot be read is reported, and a placeholder
	// stands for it, so that the rest of the section is still checked
	// as written (a zero idp.Config would add "server_url is required"
	// and the like).
	var errs []error
	read := func(name, inline, file string) string {
		v, err := secretValue(name, inline, file)
		if err != nil {
			errs = append(errs, err)
			return placeholderSecret
		}
		return v
	}
	switch {
	case client:
		secret = read("idp.client_secret", c.ClientSecret, c.ClientSecretFile)
	case c.ClientSecret != "" || c.ClientSecretFile != "":
		secret = placeholderSecret
	}
	session = placeholderSecret
	if sessions {
		session = read("idp.session_secret", c.SessionSecret, c.SessionSecretFile)
	}
	ic := idp.Config{
		IssuerURL:            c.IssuerURL,
		ServerURL:            c.ServerURL,
		Realm:                c.Realm,
		ClientID:             c.ClientID,
		ClientSecret:         secret,
		TokenLocation:        idp.TokenLocation(strings.ToUpper(c.TokenLocation)),
		CookieName:           c.CookieName,
		IncludeRoutes:        c.IncludeRoutes,
		RedirectURI:          c.RedirectURI,
		AuthPrefix:           c.AuthPrefix,
		ExcludedPaths:        c.ExcludedPaths,
		Audience:             c.Audience,
		OptionalAudiences:    c.OptionalAudiences,
		JWKSCacheTTL:         c.JWKSCacheTTL,
		Algorithms:           c.Algorithms,
		HTTPTimeout:          c.HTTPTimeout,
		UnknownKIDWait:       c.UnknownKIDWait,
		FirstKeysWait:        c.FirstKeysWait,
		Leeway:               c.Leeway,
		NoLeeway:             c.Leeway == 0, // written 0; absent is the default
		VerifiedCacheSize:    c.VerifiedCacheSize,
		DisableVerifiedCache: c.VerifiedCacheEntries() == 0,
		Claims:               c.Claims.mapping(),
		IssuerName:           c.IssuerName,
		Issuers:              c.trustedIssuers(),
	}
	ic.AllowedRedirectHosts = c.AllowedRedirectHosts
	ic.DPoP = c.DPoP.config(f.Headers.TrustForwarded)
	if session != "" {
		ic.SessionSecret = []byte(session)
	}
	sc, err := f.Session.sessionConfig(!sessions)
	if err != nil {
		errs = append(errs, err)
		sc, _ = f.Session.sessionConfig(true) // the rest of the session section, without its secret file
	}
	ic.Session = sc
	if ic.Pages, err = f.Pages.load(); err != nil {
		errs = append(errs, err)
	}
	return ic, errors.Join(errs...)
}

// secretValue returns the inline value, or the content of file with
// trailing newlines removed.
func secretValue(name, inline, file string) (string, error) {
	if file == "" {
		return inline, nil
	}
	key := name + "_file"
	b, err := os.ReadFile(file)
	if err != nil {
		return "", keyErrorf(keys(key), "%s: %w", key, err)
	}
	s := strings.TrimRight(string(b), "\r\n")
	if s == "" {
		return "", keyErrorf(keys(key), "%s %s is empty", key, file)
	}
	return s, nil
}

// keyErrorf returns a "proxy: "-prefixed problem of the settings keys (none:
// a plain error).
func keyErrorf(keys []string, format string, args ...any) error {
	err := fmt.Errorf("proxy: "+format, args...)
	if len(keys) == 0 {
		return err
	}
	return &KeyError{Key: keys[0], Also: keys[1:], Err: err}
}

func keys(k ...string) []string { return k }

// missingKeyf is keyErrorf for a required key that is not set.
func missingKeyf(keys []string, format string, args ...any) error {
	err := keyErrorf(keys, format, args...)
	if ke, ok := err.(*KeyError); ok {
		ke.Missing = true
	}
	return err
}
