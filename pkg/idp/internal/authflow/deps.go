// Package authflow serves package idp's /auth routes: the
// authorization-code sign-in (login, callback), refresh, logout, and
// OpenID Connect Back-Channel Logout, and the browser sessions' side of
// them. It knows the plugin only through Deps: the verifier's checks of
// the three kinds of token it receives, the provider's endpoints, and the
// session manager.
package authflow

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"

	"github.com/idp-proxy/idp-proxy/internal/errorpage"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/seal"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/session"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// Deps is what the /auth routes need of the plugin that serves them: the
// seam between the sign-in flow and the verifier. Every field is
// required but Sessions (nil without browser sessions) and TokenCookie.
type Deps struct {
	Site         *Site
	ClientID     string
	ClientSecret string
	Scopes       []string // asked for besides openid (idp.Config.Scopes)
	// TokenCookie names the access-token cookie the callback and refresh
	// set (idp.Config.CookieName with idp.TokenLocationCookie); "" sets none.
	TokenCookie string
	Issuer      string // the primary issuer's URL (RFC 9207 iss check)
	// KeycloakLogout: the issuer is a Keycloak realm named by ServerURL
	// and Realm, whose end-session endpoint also takes a refresh token.
	KeycloakLogout bool
	// PostLogoutRedirectURI is idp.SessionConfig.PostLogoutRedirectURI.
	PostLogoutRedirectURI string
	Now                   func() time.Time
	Logger                *slog.Logger
	HTTPClient            *http.Client
	HTTPTimeout           time.Duration
	Sealer                *seal.Sealer // the login state's ("login-state")
	Sessions              *session.Manager
	// CrossOrigin refuses a cross-origin unsafe request (the plugin's
	// http.CrossOriginProtection).
	CrossOrigin func(r *http.Request) error
	// OAuthConfig is the client's x/oauth2 configuration from the
	// discovered endpoints; its error wraps idperr.ErrUnavailable.
	OAuthConfig func(scopes []string) (*oauth2.Config, error)
	// Endpoints are the provider's logout endpoints, as discovered.
	Endpoints func() Endpoints
	// StartSpan starts a span of a call to the provider; end closes it,
	// with what as its status when err is not nil.
	StartSpan func(ctx context.Context, name string, kind trace.SpanKind) (_ context.Context, end func(err error, what string))
	// VerifyAccess verifies an access token as the middleware does.
	VerifyAccess func(ctx context.Context, raw string) (Access, error)
	// VerifyIDToken verifies an ID token (nonce, when not "", and at_hash
	// against accessToken) and returns its claims.
	VerifyIDToken func(ctx context.Context, raw, nonce, accessToken string) (*token.Claims, error)
	// VerifyLogoutToken verifies a back-channel logout token.
	VerifyLogoutToken func(ctx context.Context, raw string) (LogoutToken, error)
	// SessionEnded, when not nil, is told of every logout these routes
	// carry out (idp.Config.SessionEnded): the sid, or the sub when the
	// logout names no session.
	SessionEnded func(sid, sub string)
	// WritePage answers an error page with the configured pages.
	WritePage func(w http.ResponseWriter, pg errorpage.Page)
	// UnavailableDetail, when it returns "", lets the routes' own 503
	// detail stand; otherwise it names what is unavailable (a missing
	// endpoint of the provider).
	UnavailableDetail func(err error) string
}

// Access is what the routes keep of a verified access token.
type Access struct {
	Sub   string
	Times session.Times
}

// LogoutToken is what a verified logout token names.
type LogoutToken struct{ SID, Sub, JTI string }

// Endpoints are the provider's endpoints a logout calls ("" when the
// provider has none), and how the client authenticates at revocation.
type Endpoints struct {
	Known               bool // the discovery document is loaded
	EndSession          string
	Revocation          string
	RevocationAuthStyle oauth2.AuthStyle
}
