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
	// health, openapi, page, links, link, stats or qr. Routes of one Pattern
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
	const get, post, patch, del = http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete
	rows := []route{
		{Route: Route{Method: post, Pattern: "/shorten", Identity: true, Name: "shorten"}, serve: h.serveShorten},
		{Route: Route{Method: get, Pattern: "/health", Name: "health"}, serve: h.serveHealth},
		{Route: Route{Method: get, Pattern: "/openapi.json", Name: "openapi"}, serve: serveOpenAPI},
		{Route: Route{Method: get, Pattern: "/links", Identity: true, Name: "links"}, serve: h.withCaller(h.serveList), sameOrigin: true},
		{Route: Route{Method: post, Pattern: "/links", Identity: true, Name: "links"}, serve: h.withCaller(h.serveCreateLink), sameOrigin: true},
		{Route: Route{Method: get, Pattern: "/links/{code}", Identity: true, Name: "link"}, serve: h.withCaller(h.serveLink), sameOrigin: true},
		{Route: Route{Method: patch, Pattern: "/links/{code}", Identity: true, Name: "link"}, serve: h.withCaller(h.serveEdit), sameOrigin: true},
		{Route: Route{Method: del, Pattern: "/links/{code}", Identity: true, Name: "link"}, serve: h.withCaller(h.serveDelete), sameOrigin: true},
		{Route: Route{Method: get, Pattern: "/links/{code}/stats", Identity: true, Name: "stats"}, serve: h.withCaller(h.serveStats), sameOrigin: true},
		{Route: Route{Method: get, Pattern: "/links/{code}/qr", Identity: true, Name: "qr"}, serve: h.withCaller(h.serveQR), sameOrigin: true},
	}
	if h.page {
		rows = append(rows,
			route{Route: Route{Method: get, Pattern: "/{$}", Name: "page"}, serve: h.serveIndex},
			route{Route: Route{Method: get, Pattern: "/assets/app.js", Name: "page"}, serve: serveAsset("web/app.js", "text/javascript; charset=utf-8")},
			route{Route: Route{Method: get, Pattern: "/assets/app.css", Name: "page"}, serve: serveAsset("web/app.css", "text/css; charset=utf-8")},
			route{Route: Route{Method: get, Pattern: "/favicon.ico", Name: "page"}, serve: serveAsset("web/favicon.ico", "image/x-icon")},
			route{Route: Route{Method: get, Pattern: "/signed-out", Name: "page"}, serve: h.serveSignedOut})
	}
	return append(rows, route{Route: Route{Method: get, Pattern: "/{code}", Name: "redirect"}, serve: h.serveRedirect})
}

// dispatch is what the table builds: an http.ServeMux of every route,
// and for paths of one segment (every redirect) the same choice without
// the mux, whose matching costs about 2,000 instructions and an
// allocation per request (bench/README.md, "Shortener routing").
type dispatch struct {
	mux *http.ServeMux
	// segment holds the routes of one literal segment ("/health"); code
	// the route of a one-segment wildcard ("/{code}"), which the mux
	// gives every other one-segment path.
	segment []*methods
	code    *methods
	routes  []Route
	names   map[string]string // pattern → Route.Name
}

// build registers the rows on an http.ServeMux, one pattern per path
// (without a method, so that a wrong method reaches methods and is
// answered as problem+json, before any authentication).
func (h *Handler) build(rows []route, authenticate func(http.Handler) http.Handler) dispatch {
	d := dispatch{mux: http.NewServeMux(), names: map[string]string{}}
	var paths []*methods
	byPattern := map[string]*methods{}
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
			d.names[row.Pattern] = row.Name
		}
		m.methods = append(m.methods, row.Method)
		m.handlers = append(m.handlers, serve)
		d.routes = append(d.routes, row.Route)
	}
	for _, m := range paths {
		m.allow = allowHeader(m.methods)
		d.mux.Handle(m.pattern, m)
		if seg, ok := oneSegment(m.pattern); ok {
			if strings.HasPrefix(seg, "{") {
				d.code = m
			} else {
				d.segment = append(d.segment, m)
			}
		}
	}
	// Everything else, including trailing slashes and extra segments.
	d.mux.HandleFunc("/", notFound)
	return d
}

// oneSegment returns the segment of a pattern of one non-empty segment.
func oneSegment(pattern string) (string, bool) {
	seg := pattern[1:]
	return seg, seg != "" && seg != "{$}" && !strings.Contains(seg, "/")
}

// serve answers r: a path of one segment from d.segment or d.code, as
// the mux would and recording the pattern as it does; any other path
// through the mux.
func (d *dispatch) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if len(p) > 1 && p[0] == '/' && p[1] != '.' && d.code != nil && strings.IndexByte(p[1:], '/') < 0 {
		m := d.code
		for _, s := range d.segment { // a handful: cheaper than a map
			if s.pattern == p {
				m = s
				break
			}
		}
		r.Pattern = m.pattern
		m.ServeHTTP(w, r)
		return
	}
	// No route has an empty segment or one that starts with a dot: answer
	// such paths here, where the mux would redirect them to their cleaned
	// form (a 307 from "//abc" or "/x/../abc" to "/abc").
	if uncleanPath(p) {
		notFound(w, r)
		return
	}
	d.mux.ServeHTTP(w, r)
}

// uncleanPath reports whether p has an empty segment or one that starts
// with a dot.
func uncleanPath(p string) bool {
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '/' && (p[i+1] == '/' || p[i+1] == '.') {
			return true
		}
	}
	return false
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
