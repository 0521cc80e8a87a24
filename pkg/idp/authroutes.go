package idp

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/authflow"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/seal"
)

// The plugin's end of the seam to its /auth routes (package
// internal/authflow): the verifier's checks of the tokens the routes
// receive, the provider's endpoints, and the session manager.

// Limits and names of the /auth routes.
const (
	// LoginStateTTL is how long a login may take between GET login and
	// GET callback.
	LoginStateTTL = authflow.StateTTL
	// LoginStateCookie is the name of the sealed login-state cookie
	// (state, nonce, PKCE verifier, return-to), scoped to Config.AuthPrefix
	// and, on a host under SessionConfig.CookieDomain, to that domain (the
	// callback host reads a login started on an app's host).
	LoginStateCookie = authflow.StateCookie
)

// Routes returns the handler of the authorization-code flow. It matches the
// full request path, so mount it at Config.AuthPrefix + "/" without
// stripping the prefix:
//
//	mux.Handle(cfg.AuthPrefix+"/", p.Routes())
//
// The routes, their answers and their checks are described in the
// package documentation, under "The /auth routes".
//
// When Config.IncludeRoutes is false, Routes returns a handler that answers
// 404 problem+json to every request, so mounting it unconditionally is
// safe. Routes returns the same handler on every call.
func (p *Plugin) Routes() http.Handler {
	p.routesOnce.Do(func() { p.routes = p.newRoutes() })
	return p.routes
}

func (p *Plugin) newRoutes() http.Handler {
	if !p.cfg.IncludeRoutes {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			problem.Write(w, http.StatusNotFound, "the authentication routes are not enabled")
		})
	}
	sealer, err := seal.New(p.cfg.SessionSecret, "login-state", sealScope(p.cfg, p.issuer))
	if err != nil { // cannot happen with a validated config
		p.cfg.Logger.Error("idp: auth routes disabled", "error", err)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			problem.Write(w, http.StatusInternalServerError, "internal error")
		})
	}
	if want := strings.TrimSuffix(p.cfg.AuthPrefix, "/") + "/callback"; p.site.RedirectURI.Path != want {
		// Legitimate behind a proxy that rewrites paths, but the usual cause
		// is a typo: the state cookie (Path=prefix) would not come back.
		p.cfg.Logger.Warn("idp: redirect_uri does not point at the callback route", "redirect_path", p.site.RedirectURI.Path, "callback_path", want)
	}
	d := authflow.Deps{
		Site:           p.site,
		ClientID:       p.cfg.ClientID,
		ClientSecret:   p.cfg.ClientSecret,
		Scopes:         p.cfg.Scopes,
		Issuer:         p.issuer,
		KeycloakLogout: p.cfg.IssuerURL == "",
		Now:            p.cfg.Now,
		Logger:         p.cfg.Logger,
		HTTPClient:     p.cfg.HTTPClient,
		HTTPTimeout:    p.cfg.HTTPTimeout,
		Sealer:         sealer,
		Sessions:       p.sessions,
		CrossOrigin:    p.cop.Check,
		OAuthConfig:    p.oauthConfig,
		Endpoints:      p.logoutEndpoints,
		StartSpan: func(ctx context.Context, name string, kind trace.SpanKind) (context.Context, func(error, string)) {
			ctx, span := p.startSpan(ctx, name, kind)
			return ctx, func(err error, what string) { endSpan(span, err, what) }
		},
		VerifyAccess: func(ctx context.Context, raw string) (authflow.Access, error) {
			id, err := p.verify(ctx, raw)
			if err != nil {
				return authflow.Access{}, err
			}
			return authflow.Access{Sub: id.Payload.Subject, Times: accessTimes(id)}, nil
		},
		VerifyIDToken:     p.verifyIDToken,
		VerifyLogoutToken: p.verifyLogoutToken,
		WritePage:         p.answerPage,
		SessionEnded:      p.cfg.SessionEnded,
		UnavailableDetail: unavailableDetail,
	}
	if p.cfg.TokenLocation == TokenLocationCookie {
		d.TokenCookie = p.cfg.CookieName
	}
	if p.cfg.Session != nil {
		d.PostLogoutRedirectURI = p.cfg.Session.PostLogoutRedirectURI
	}
	return authflow.New(d)
}

// unavailableDetail names what a 503 of the routes lacks: an endpoint the
// provider does not publish, or the session store.
func unavailableDetail(err error) string {
	if me := (*missingEndpointError)(nil); errors.As(err, &me) {
		return me.detail()
	}
	if errors.Is(err, ErrSessionStoreUnavailable) {
		return detailSessionStoreUnavailable
	}
	return ""
}

// logoutEndpoints are the provider's endpoints a logout calls: the
// discovered ones, or before discovery a Keycloak realm's own paths.
func (p *Plugin) logoutEndpoints() authflow.Endpoints {
	keycloak := p.cfg.IssuerURL == ""
	meta := p.keys.meta.Load()
	known := meta != nil
	if !known {
		meta = &providerMetadata{keycloak: keycloak}
		if keycloak {
			meta.keycloakDefaults(p.issuer)
		}
	}
	return authflow.Endpoints{Known: known, EndSession: meta.EndSessionEndpoint, Revocation: meta.RevocationEndpoint,
		RevocationAuthStyle: meta.authStyle(meta.RevocationAuthMethods)}
}

// oauthConfig builds the x/oauth2 configuration of the client from the
// discovered endpoints. The error wraps ErrUnavailable: discovery has not
// completed, or the provider's document lacks the authorization or token
// endpoint (a provider other than a Keycloak realm; nothing is guessed).
func (p *Plugin) oauthConfig(scopes []string) (*oauth2.Config, error) {
	meta := p.keys.meta.Load()
	if meta == nil {
		return nil, errNotDiscovered
	}
	for _, e := range [...]struct{ name, url string }{
		{"authorization_endpoint", meta.AuthorizationEndpoint},
		{"token_endpoint", meta.TokenEndpoint},
	} {
		if e.url == "" {
			return nil, &missingEndpointError{name: e.name}
		}
	}
	return &oauth2.Config{
		ClientID:     p.cfg.ClientID,
		ClientSecret: p.cfg.ClientSecret,
		Endpoint: oauth2.Endpoint{
			AuthURL:   meta.AuthorizationEndpoint,
			TokenURL:  meta.TokenEndpoint,
			AuthStyle: meta.tokenAuthStyle(),
		},
		RedirectURL: p.cfg.RedirectURI,
		Scopes:      scopes,
	}, nil
}

// IsNavigation reports whether r is a browser navigating to a page (as
// opposed to an API call or a script's request): GET or HEAD, Accept
// naming text/html, no Authorization header, and neither Sec-Fetch-Mode
// of a script (cors, no-cors, same-origin) nor X-Requested-With. With
// browser sessions, such a request without credentials is sent to the
// login route; every other one gets 401.
func IsNavigation(r *http.Request) bool { return authflow.IsNavigation(r) }

// redirectToLogin sends a browser to the login route, to come back to the
// page it asked for (when that is a safe return-to target, else "/").
func (p *Plugin) redirectToLogin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, p.LoginURLFor(r), http.StatusFound)
}

// LoginURLFor returns the URL of the login route that brings the browser
// back to the page r asked for. It is LoginURL(r.URL.RequestURI()), a
// site-relative URL, unless r is for another host than RedirectURI's (the
// central callback host) that Config.AllowedRedirectHosts allows: then it
// is the absolute URL of the login route on the callback host, with r's
// absolute URL (RedirectURI's scheme, r.Host) as return_to, so that one
// callback serves every app of the sign-in.
func (p *Plugin) LoginURLFor(r *http.Request) string { return p.site.LoginURLFor(r) }

// LoginURL returns the site-relative URL of the login route that brings
// the browser back to returnTo (a path with an optional query; "/" when
// it is not a safe return-to target): "/auth/login?return_to=%2Fpage".
func (p *Plugin) LoginURL(returnTo string) string { return p.site.LoginURL(returnTo) }

// clientRefused is authflow.ClientRefused; sanitizeErrorCode is
// authflow.SanitizeErrorCode.
var (
	clientRefused     = authflow.ClientRefused
	sanitizeErrorCode = authflow.SanitizeErrorCode
)
