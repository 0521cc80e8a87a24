// Package proxy is the idp-proxy sidecar: an authenticating reverse proxy
// that validates bearer tokens with pkg/idp, applies per-route rules and
// forwards requests with identity headers to one upstream, or to many
// chosen by host and path (Config.Upstreams).
//
// The caller builds the *idp.Plugin (provider, audience, token location,
// /auth routes) and hands it to New with a Config of the proxy's own
// settings: upstream, rules, default policy, identity headers, body limit.
// The rules compile once into an http.ServeMux. For each request the proxy
//
//  1. rejects ambiguous paths with 400 (dot segments, "//", encoded
//     slashes and backslashes, ";" parameters, control characters, double
//     encoding): the path the rules judge is the path the upstream gets;
//  2. serves the plugin's /auth routes itself when its IncludeRoutes is on;
//  3. picks the rule by ServeMux precedence (HEAD follows GET; the query
//     never matters), or default_policy when none matches;
//  4. asks the plugin for one verdict (idp.Plugin.Authorize: the token,
//     then the rule's roles, client roles and scopes) and, when refused,
//     answers as pkg/idp does (401/400/403/503);
//  5. forwards with httputil.ReverseProxy's Rewrite: client-sent identity,
//     forwarding and URL-rewrite headers are stripped in every spelling,
//     then X-Auth-Request-User, -Preferred-Username, -Email, -Roles,
//     Authorization: Bearer <token>, X-Forwarded-For/-Host/-Proto and
//     X-Request-Id are set by the proxy.
//
// Rejected requests never reach the upstream. Upstream failures are 502,
// timeouts 504, all answers of the proxy itself application/problem+json.
//
// Decide reports the verdict for a method, path and token by the same code
// as ServeHTTP, without forwarding or writing anything.
//
// Usage:
//
//	plugin, err := idp.New(ctx, idp.Config{ServerURL: ..., Realm: ..., ClientID: ...})
//	if err != nil { ... }
//	defer plugin.Close()
//	cfg := proxy.DefaultConfig()
//	cfg.Upstream.URL = "http://127.0.0.1:8000"
//	cfg.Routes = []proxy.RouteConfig{{Match: "POST /shorten", Roles: []string{"creator"}}}
//	p, err := proxy.New(plugin, cfg, proxy.Options{Logger: logger, AccessLog: logger})
//	if err != nil { ... }
//	go http.ListenAndServe("127.0.0.1:9180", p.OpsHandler()) // /healthz, /readyz, /metrics
//	log.Fatal(http.ListenAndServe("127.0.0.1:4180", p))
//
// A program that checks its configuration before serving compiles once:
// Compile (what check-config prints, Compiled.Table), then NewCompiled. A
// program that reloads serves a Reloadable, which swaps proxies atomically
// and closes a replaced plugin once its requests are done.
//
// cmd/idp-proxy reads all of this from one YAML file (its internal/config
// package) and adds listeners, timeouts, TLS and graceful shutdown.
package proxy
