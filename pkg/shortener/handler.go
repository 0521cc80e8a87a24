package shortener

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/idp-proxy/idp-proxy/internal/problem"
	"github.com/idp-proxy/idp-proxy/internal/tracing"
)

// DefaultLoginURL is the page's sign-in link: idp-proxy's login route,
// coming back to the page.
const DefaultLoginURL = "/auth/login?return_to=/"

// HandlerOptions configure a Handler: how the caller is identified, and
// the page. The zero value is usable: every field has the default given
// in brackets.
type HandlerOptions struct {
	// Authenticate wraps the routes that need the caller's identity
	// (Route.Identity in Routes: POST /shorten and everything under
	// /links): it answers 401/403 itself or calls next with the identity
	// in the request (for Owner and Roles to read). With pkg/idp
	// in-process: see package idpauth. The handler applies it to the
	// routes it marks, so renaming a route cannot lose the protection.
	// [nil: every route is served without one, as behind idp-proxy, which
	// judges requests before they arrive]
	Authenticate func(next http.Handler) http.Handler
	// Owner returns the identity of the caller, recorded as
	// Link.CreatedBy by POST /shorten and POST /links and required by the
	// /links routes (401 without it); "" means unknown. [nil: no identity,
	// so /links always answers 401]
	//
	// Only use OwnerFromHeader when a trusted proxy in front of the service
	// sets (and strips client copies of) that header.
	Owner func(*http.Request) string
	// Roles returns the caller's roles; a caller holding one of AdminRoles
	// may read and delete every link. [nil: nobody is an administrator]
	Roles func(*http.Request) []string
	// AdminRoles are the roles that make a caller an administrator.
	// [none]
	AdminRoles []string
	// Page serves the web page at GET / and its assets under /assets/.
	// [false: GET / is a 404, as the specification has it]
	Page bool
	// LoginURL is where the page sends a visitor without identity: a path
	// on this site. ["": DefaultLoginURL, idp-proxy's login route]
	LoginURL string
	// LogoutURL is where the page's "Sign out" link goes: a path on this
	// site, such as idp-proxy's "/auth/logout". ["": the page has no
	// sign-out link]
	LogoutURL string
	// DisplayName returns the name the page shows as "Signed in as ..."
	// (GET /links answers it as user.name), e.g. NameFromHeader of
	// idp-proxy's X-Auth-Request-Preferred-Username. [nil: the Owner's
	// value]
	DisplayName func(*http.Request) string
	// Country returns the country (ISO 3166-1 alpha-2) of a client
	// address for the visit statistics (Options.VisitStats), e.g. the
	// Country method of a visitinfo.GeoIP; the address is used for this
	// lookup only and never kept. [nil: no countries]
	Country func(netip.Addr) string
	// ClientIP returns the client's address for Country. [nil: the
	// request's RemoteAddr; see ClientIPFromHeader behind a proxy]
	ClientIP func(*http.Request) netip.Addr
	// HealthTimeout bounds the store Ping of GET /health. [0: 2s]
	HealthTimeout time.Duration
	// TracerProvider records an OpenTelemetry server span per request,
	// named after its route ("GET /{code}"): method, path (never the
	// query), route and status; the Service's store spans (see
	// Options.TracerProvider) are its children. [nil: none, at no cost]
	TracerProvider trace.TracerProvider
	// TrustedTraceParents are the callers (by peer address: idp-proxy in
	// front) whose W3C traceparent and tracestate are continued; from
	// any other caller a traceparent starts a new trace linked to it.
	// [none]
	TrustedTraceParents []netip.Prefix
}

// Handler is the HTTP API of a Service (see Routes). Create one with
// NewHandler.
type Handler struct {
	svc           *Service
	dispatch      dispatch
	owner         func(*http.Request) string
	roles         func(*http.Request) []string
	adminRoles    []string
	page          bool
	loginURL      string
	logoutURL     string
	displayName   func(*http.Request) string
	healthTimeout time.Duration
	country       func(netip.Addr) string
	clientIP      func(*http.Request) netip.Addr
	pageOnce      pageCache
	ts            *tracing.Server // nil: no tracing
	// redirectCacheControl is the Cache-Control header value of every
	// redirect, shared by them: nothing may change its element (net/http
	// copies a header's values when it writes them).
	redirectCacheControl []string
}

// NewHandler returns the HTTP API of svc. It returns an error when the
// options are invalid. The routes Routes marks with Identity go through
// o.Authenticate; the unsafe methods of /links also through net/http's
// CrossOriginProtection.
func NewHandler(svc *Service, o HandlerOptions) (*Handler, error) {
	if svc == nil {
		return nil, errors.New("shortener: nil service")
	}
	h := &Handler{
		svc:           svc,
		owner:         o.Owner,
		roles:         o.Roles,
		adminRoles:    slices.Clone(o.AdminRoles),
		page:          o.Page,
		loginURL:      o.LoginURL,
		logoutURL:     o.LogoutURL,
		displayName:   o.DisplayName,
		healthTimeout: o.HealthTimeout,
		country:       o.Country,
		clientIP:      o.ClientIP,

		redirectCacheControl: []string{redirectCacheControl},
	}
	if h.clientIP == nil {
		h.clientIP = RemoteIP
	}
	if h.loginURL == "" {
		h.loginURL = DefaultLoginURL
	}
	if !sitePath(h.loginURL) {
		return nil, fmt.Errorf("shortener: login URL %q must be a path on this site", o.LoginURL)
	}
	if h.logoutURL != "" && !sitePath(h.logoutURL) {
		return nil, fmt.Errorf("shortener: logout URL %q must be a path on this site", o.LogoutURL)
	}
	if h.healthTimeout <= 0 {
		h.healthTimeout = 2 * time.Second
	}
	h.ts = traceServer(o)
	h.dispatch = h.build(h.table(), o.Authenticate)
	return h, nil
}

// ServeHTTP serves the routes of Routes; every other path is a 404 and
// every other method a 405, both problem+json.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.ts != nil {
		h.serveTraced(w, r)
		return
	}
	h.dispatch.serve(w, r)
}

// Routes lists the routes the handler serves: the specification's three,
// the /links API, the OpenAPI document and, with HandlerOptions.Page, the
// page and its assets.
func (h *Handler) Routes() []Route {
	return slices.Clone(h.dispatch.routes)
}

// RouteName returns the Route.Name of the route that served r, once
// ServeHTTP has returned: ServeHTTP records the matched pattern in
// r.Pattern, as http.ServeMux does. It returns "" for a request that
// matched no route (a 404). Metrics use it as a label of bounded
// cardinality.
func (h *Handler) RouteName(r *http.Request) string {
	return h.dispatch.names[r.Pattern]
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	problem.Write(w, http.StatusMethodNotAllowed, "method not allowed; use "+allow)
}

// notFound answers paths that match no route.
func notFound(w http.ResponseWriter, _ *http.Request) {
	problem.Write(w, http.StatusNotFound, "not found")
}

// sitePath reports whether s is a path on this site: no scheme, no host,
// one leading slash.
func sitePath(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "" && u.Host == "" && strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//")
}
