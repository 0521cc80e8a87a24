// Package shortener is a URL shortener: a [Service] that issues short codes
// for absolute http(s) URLs (the domain, without HTTP), a [Handler] that
// serves it as an HTTP API ([NewHandler]), and the [Store] interface that
// its backends implement.
//
// The specification's HTTP API, unchanged:
//
//	POST /shorten   {"url": "https://example.com/a/long/path"}
//	                → 201 {"short_code","short_url","url"} + Location: <short_url>
//	GET  /{code}    → 302 Location: <the stored URL, byte for byte>
//	GET  /health    → 200 {"status":"healthy","service":"url_shortener"}
//	                  503 {"status":"unhealthy",...} when the store is unreachable
//
// POST /shorten also takes short_code (a custom code, with
// Options.CustomCodes), expires_at and max_visits; GET /{code} answers 410
// Gone for an expired or used-up link. The /links API serves a caller's
// own links (list, get, create, delete, QR code) and needs an identity
// (HandlerOptions.Owner); GET /openapi.json describes every route (see
// [OpenAPI]); with HandlerOptions.Page, GET / serves a small web page. The
// routes are one table ([Handler.Routes]) on an [http.ServeMux]. Visits of
// links without a limit are counted in memory and written in batches
// (Options.VisitFlushInterval); close the Service to write the last ones.
//
// Every error answer is an RFC 9457 application/problem+json document with a
// detail a user can act on; failures of the store are logged and answered
// with a generic detail.
//
// Backends live in sub-packages (memstore, boltstore, pgstore) and all pass
// the conformance suite in storetest.
package shortener
