package shortener

import (
	_ "embed"
	"net/http"
	"strconv"
)

// openAPIDocument is the OpenAPI 3.1 description of every route of
// Handler; TestOpenAPIMatchesRoutes keeps the two in step.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the OpenAPI 3.1 document of the HTTP API (a copy).
func OpenAPI() []byte { return append([]byte(nil), openAPIDocument...) }

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(openAPIDocument)))
	hdr.Set("Cache-Control", "public, max-age=300")
	hdr.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDocument)
}
