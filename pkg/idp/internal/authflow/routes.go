package authflow

import (
	"context"
	"errors"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/seal"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/idp-proxy/idp-proxy/internal/errorpage"
	"golang.org/x/oauth2"
)

// Limits and names of the /auth routes.
const (
	// StateTTL is idp.StateTTL: how long a login may take between
	// GET login and GET callback.
	StateTTL = 10 * time.Minute
	// StateCookie is idp.StateCookie: the sealed login-state cookie.
	StateCookie = "idp_login"
	// maxAuthBody bounds the JSON bodies of logout and refresh.
	maxAuthBody = 64 << 10
	// maxUsedStates bounds the memory of completed logins (replay guard).
	maxUsedStates = 1 << 16
	// maxLogoutTokenAge bounds how old (by iat) a logout token may be
	// (idp's logout-token kind checks it); its jti is kept twice as long.
	MaxLogoutTokenAge = 5 * time.Minute
)

// New returns the handler of the /auth routes (see idp.Plugin.Routes).
func New(d Deps) http.Handler {
	scopes := []string{oidc.ScopeOpenID}
	for _, s := range d.Scopes {
		if s != "" && !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	prefix := d.Site.AuthPrefix
	if prefix == "/" {
		prefix = ""
	}
	a := &authRoutes{
		d:             d,
		seal:          d.Sealer,
		used:          newUsedSet(maxUsedStates),
		scopes:        scopes,
		httpsRedirect: d.Site.RedirectURI.Scheme == "https",
		cookiePath:    d.Site.AuthPrefix,
		mux:           http.NewServeMux(),
		notFound: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, http.StatusNotFound, "no such authentication route")
		}),
	}
	logout := route{"POST", (*authRoutes).logout}
	if d.Sessions != nil {
		logout = route{"GET, POST", (*authRoutes).sessionLogout}
		a.handle(prefix+"/backchannel-logout", route{http.MethodPost, (*authRoutes).backchannelLogout})
		d.Sessions.SetLateLogout(a.providerLogout)
	}
	a.handle(prefix+"/login", route{http.MethodGet, (*authRoutes).login})
	a.handle(prefix+"/callback", route{http.MethodGet, (*authRoutes).callback})
	a.handle(prefix+"/logout", logout)
	a.handle(prefix+"/refresh", route{http.MethodPost, (*authRoutes).refresh})
	// Every other path: a miss through a catch-all costs ServeMux less
	// than a miss without one, and its own 404 is text/plain.
	a.mux.Handle("/", a.notFound)
	return a
}

// route is one /auth path: the methods it serves and its handler.
type route struct {
	methods string // one method, or a list ("GET, POST"): the Allow header of its 405
	serve   func(*authRoutes, http.ResponseWriter, *http.Request)
}

// handle registers rt at path on a.mux: one pattern a method, and the
// path without a method for the 405 (ServeMux's own 405 is text/plain).
// A "GET" pattern also matches HEAD, which the routes refuse with 405.
func (a *authRoutes) handle(path string, rt route) {
	serve := func(w http.ResponseWriter, r *http.Request) { rt.serve(a, w, r) }
	notAllowed := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", rt.methods)
		writeProblem(w, http.StatusMethodNotAllowed, "method not allowed; use "+rt.methods)
	}
	methods := strings.Split(rt.methods, ", ")
	for _, m := range methods {
		a.mux.HandleFunc(m+" "+path, serve)
	}
	if !slices.Contains(methods, http.MethodHead) {
		a.mux.HandleFunc(http.MethodHead+" "+path, notAllowed)
	}
	a.mux.HandleFunc(path, notAllowed)
}

// authRoutes serves the /auth routes.
type authRoutes struct {
	d             Deps
	seal          *seal.Sealer
	used          *usedSet
	scopes        []string
	httpsRedirect bool
	cookiePath    string
	mux           *http.ServeMux
	notFound      http.Handler
}

func (a *authRoutes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if errorpage.Wanted(r) {
		pw := &authPageWriter{ResponseWriter: w, a: a}
		defer pw.finish()
		w = pw
	}
	a.route(r).ServeHTTP(w, r)
}

// route returns the handler of r's path and method. The routes match the
// decoded path exactly: a path ServeMux would clean ("/auth//login",
// "/auth/login/") is no route rather than a redirect, and an encoded
// slash ("/auth%2Flogin") is a slash. Handler, unlike ServeHTTP, leaves
// r.Pattern as the caller's mux set it.
func (a *authRoutes) route(r *http.Request) http.Handler {
	if r.URL.Path == "" || path.Clean(r.URL.Path) != r.URL.Path {
		return a.notFound
	}
	if r.URL.RawPath != "" {
		u := *r.URL
		u.RawPath = ""
		r2 := *r
		r2.URL = &u
		r = &r2
	}
	h, _ := a.mux.Handler(r)
	return h
}

// oauthConfig builds the x/oauth2 configuration from the discovered
// endpoints (Deps.OAuthConfig).
func (a *authRoutes) oauthConfig() (*oauth2.Config, error) { return a.d.OAuthConfig(a.scopes) }

// providerCtx bounds a call to the provider by HTTPTimeout and makes
// x/oauth2 use the plugin's HTTP client.
func (a *authRoutes) providerCtx(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, a.d.HTTPTimeout)
	return context.WithValue(ctx, oauth2.HTTPClient, a.d.HTTPClient), cancel
}

// providerFailure answers a failed call to the token endpoint: a refusal
// (an OAuth error response with a 4xx status) is 401 with refusal as
// detail, except a refusal of the client itself (ClientRefused: the
// proxy's configuration is wrong, not the user's sign-in), which is 502
// logged at ERROR; anything else (unreachable, timeout, 5xx, garbage) is
// 502. The provider's answer is logged by its error code only.
func (a *authRoutes) providerFailure(w http.ResponseWriter, what string, err error, refusal string) {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		if status < 400 || status >= 500 {
			a.d.Logger.Warn("idp: "+what+": identity provider failed", "status", status)
			writeProblem(w, http.StatusBadGateway, "the identity provider failed")
			return
		}
		code := SanitizeErrorCode(re.ErrorCode)
		if ClientRefused(status, code) {
			// Not the user's doing: the provider does not accept this
			// client (a wrong or missing client_secret, an unknown or
			// disabled client). Signing in again cannot help.
			a.d.Logger.Error("idp: "+what+": the identity provider refused this client's credentials; check client_id and client_secret",
				"status", status, "error", code, "client_id", a.d.ClientID)
			markMisconfigured(w)
			writeProblem(w, http.StatusBadGateway, detailMisconfiguredClient+" ("+code+")")
			return
		}
		a.d.Logger.Info("idp: "+what+": refused by the identity provider", "status", status, "error", code)
		writeProblem(w, http.StatusUnauthorized, refusal)
		return
	}
	a.d.Logger.Warn("idp: "+what+": identity provider unreachable", "error", err)
	writeProblem(w, http.StatusBadGateway, "the identity provider could not be reached")
}

// detailMisconfiguredClient answers a sign-in or refresh whose client the
// provider refused.
const detailMisconfiguredClient = "the proxy is misconfigured: the identity provider refused its client credentials"

// ClientRefused reports whether a token endpoint's error answer refuses
// the client itself rather than the grant: invalid_client (RFC 6749
// §5.2), or unauthorized_client with 401, which is how Keycloak answers a
// missing client secret.
func ClientRefused(status int, code string) bool {
	return code == "invalid_client" || code == "unauthorized_client" && status == http.StatusUnauthorized
}
