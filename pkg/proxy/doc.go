// Package proxy is the idp-proxy sidecar: an authenticating reverse proxy
// that validates bearer tokens with pkg/idp, applies per-route rules and
// forwards requests to one upstream with identity headers.
//
// A Config (from YAML with Load, or DefaultConfig in Go) compiles once into
// an http.ServeMux of rules. For each request the proxy
//
//  1. rejects ambiguous paths with 400 (dot segments, "//", encoded
//     slashes and backslashes, ";" parameters, control characters, double
//     encoding): the path the rules judge is the path the upstream gets;
//  2. serves the idp /auth routes itself when idp.include_routes is on;
//  3. picks the rule by ServeMux precedence (HEAD follows GET; the query
//     never matters), or default_policy when none matches;
//  4. verifies the token (401/403/503 as pkg/idp answers them) and the
//     rule's roles, client roles and scopes;
//  5. forwards with httputil.ReverseProxy's Rewrite: client-sent identity,
//     forwarding and URL-rewrite headers are stripped in every spelling,
//     then X-Auth-Request-User, -Preferred-Username, -Email, -Roles,
//     Authorization: Bearer <token>, X-Forwarded-For/-Host/-Proto and
//     X-Request-Id are set by the proxy.
//
// Rejected requests never reach the upstream. Upstream failures are 502,
// timeouts 504, all answers of the proxy itself application/problem+json.
//
// Usage:
//
//	cfg, err := proxy.Load("config.yaml", proxy.LoadOptions{Env: os.Environ()})
//	if err != nil { ... }
//	p, err := proxy.New(ctx, cfg, proxy.Options{Logger: logger, AccessLog: logger})
//	if err != nil { ... }
//	defer p.Close()
//	go http.ListenAndServe(cfg.MetricsListen, p.OpsHandler()) // /healthz, /readyz, /metrics
//	log.Fatal(http.ListenAndServe(cfg.Listen, p))
//
// cmd/idp-proxy wraps this with timeouts, TLS and graceful shutdown.
package proxy
