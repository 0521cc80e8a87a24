package shortener

import (
	"net/http"
	"strings"
)

// Route is one route of Handler.
type Route struct {
	Method  string // "GET" also serves HEAD
	Pattern string // as http.ServeMux writes it, without the method
	// Identity marks a route that needs the caller's identity: Handler
	// serves it through HandlerOptions.Authenticate.
	Identity bool
	// Name names the route in metrics and logs: shorten, redirect,
	// health, openapi, page, links, link or qr. Routes of one Pattern
	// share it.
	Name string
}

// route is a row of the route table: the Route and what serves it.
type route struct {
	Route
	serve http.HandlerFunc
	// sameOrigin refuses browsers' cross-origin requests of unsafe
	// methods: a session cookie is no proof of intent.
	sameOrigin bool
}

// table is the one list of the handler's routes: it builds the
// http.ServeMux, answers Routes and names the routes for metrics. The
// order of a path's methods is the order of its 405's Allow header.
func (h *Handler) table() []route {
	const get, post, del = http.MethodGet, http.MethodPost, http.MethodDelete
	rows := []route{
		{Route: Route{Method: post, Pattern: "/shorten", Identity: true, Name: "shorten"}, serve: h.serveShorten},
		{Route: Route{Method: get, Pattern: "/health", Name: "health"}, serve: h.serveHealth},
		{Route: Route{Method: get, Pattern: "/openapi.json", Name: "openapi"}, serve: serveOpenAPI},
		{Route: Route{Method: get, Pattern: "/links", Identity: true, Name: "links"}, serve: h.withCaller(h.serveList), sameOrigin: true},
		{Route: Route{Method: post, Pattern: "/links", Identity: true, Name: "links"}, serve: h.withCaller(h.serveCreateLink), sameOrigin: true},
		{Route: Route{Method: get, Pattern: "/links/{code}", Identity: true, Name: "link"}, serve: h.withCaller(h.serveLink), sameOrigin: true},
		{Route: Route{Method: del, Pattern: "/links/{code}", Identity: true, Name: "link"}, serve: h.withCaller(h.serveDelete), sameOrigin: true},
		{Route: Route{Method: get, Pattern: "/links/{code}/qr", Identity: true, Name: "qr"}, serve: h.withCaller(h.serveQR), sameOrigin: true},
	}
	if h.page {
		rows = append(rows,
			route{Route: Route{Method: get, Pattern: "/{$}", Name: "page"}, serve: h.serveIndex},
			route{Route: Route{Method: get, Pattern: "/assets/app.js", Name: "page"}, serve: serveAsset("web/app.js", "text/javascript; charset=utf-8")},
			route{Route: Route{Method: get, Pattern: "/assets/app.css", Name: "page"}, serve: serveAsset("web/app.css", "text/css; charset=utf-8")})
	}
	return append(rows, route{Route: Route{Method: get, Pattern: "/{code}", Name: "redirect"}, serve: h.serveRedirect})
}

// build registers the rows on an http.ServeMux, one pattern per path
// (without a method, so that a wrong method reaches methods and is
// answered as problem+json, before any authentication), and returns the
// mux, the routes and their names by pattern.
func (h *Handler) build(rows []route, authenticate func(http.Handler) http.Handler) (*http.ServeMux, []Route, map[string]string) {
	mux := http.NewServeMux()
	var (
		routes    []Route
		names     = map[string]string{}
		paths     []*methods
		byPattern = map[string]*methods{}
	)
	cop := http.NewCrossOriginProtection()
	for _, row := range rows {
		var serve http.Handler = row.serve
		if row.sameOrigin {
			serve = cop.Handler(serve)
		}
		if row.Identity && authenticate != nil {
			serve = authenticate(serve)
		}
		m := byPattern[row.Pattern]
		if m == nil {
			m = &methods{pattern: row.Pattern}
			byPattern[row.Pattern] = m
			paths = append(paths, m)
			names[row.Pattern] = row.Name
		}
		m.methods = append(m.methods, row.Method)
		m.handlers = append(m.handlers, serve)
		routes = append(routes, row.Route)
	}
	for _, m := range paths {
		m.allow = allowHeader(m.methods)
		mux.Handle(m.pattern, m)
	}
	// Everything else, including trailing slashes and extra segments.
	mux.HandleFunc("/", notFound)
	return mux, routes, names
}

// methods serves one path: the handler of the request's method (HEAD is
// served as GET), or 405 with Allow.
type methods struct {
	pattern  string
	methods  []string
	handlers []http.Handler
	allow    string
}

func (m *methods) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	for i, mm := range m.methods {
		if mm == method {
			m.handlers[i].ServeHTTP(w, r)
			return
		}
	}
	methodNotAllowed(w, m.allow)
}

// allowHeader lists methods for Allow, with HEAD after GET.
func allowHeader(methods []string) string {
	var b strings.Builder
	for _, m := range methods {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(m)
		if m == http.MethodGet {
			b.WriteString(", HEAD")
		}
	}
	return b.String()
}
