package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// The proxy's own answers to gRPC calls (see grpc.go): trailers-only gRPC
// answers carrying the gRPC code of the HTTP status the answer would have
// had, and its problem detail as grpc-message.

// gRPC status codes (google.golang.org/grpc/codes), those the proxy sends.
const (
	grpcUnknown           = 2
	grpcInvalidArgument   = 3
	grpcDeadlineExceeded  = 4
	grpcPermissionDenied  = 7
	grpcResourceExhausted = 8
	grpcUnimplemented     = 12
	grpcInternal          = 13
	grpcUnavailable       = 14
	grpcUnauthenticated   = 16
)

// grpcCode is the gRPC status of the proxy's HTTP answer status.
func grpcCode(status int) int {
	switch status {
	case http.StatusUnauthorized:
		return grpcUnauthenticated
	case http.StatusForbidden:
		return grpcPermissionDenied
	case http.StatusBadRequest:
		return grpcInvalidArgument
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusMisdirectedRequest:
		return grpcUnimplemented
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return grpcDeadlineExceeded
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests:
		return grpcResourceExhausted
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return grpcUnavailable
	case http.StatusInternalServerError:
		return grpcInternal
	}
	return grpcUnknown
}

// grpcAnswer collects an answer written for HTTP clients (problem+json,
// by the plugin or the proxy) to send it as a gRPC one by finish. Its
// headers (WWW-Authenticate, Retry-After) are kept.
type grpcAnswer struct {
	w      http.ResponseWriter
	r      *http.Request
	status int
	body   []byte
}

// asGRPC returns w as is for requests that are no gRPC calls, else a
// grpcAnswer and its finish, to call once the answer is written.
func asGRPC(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, func()) {
	if !isGRPC(r) {
		return w, func() {}
	}
	g := &grpcAnswer{w: w, r: r}
	return g, g.finish
}

func (g *grpcAnswer) Header() http.Header { return g.w.Header() }

func (g *grpcAnswer) WriteHeader(code int) {
	if g.status == 0 && code >= 200 {
		g.status = code
	}
}

func (g *grpcAnswer) Write(b []byte) (int, error) {
	if g.status == 0 {
		g.status = http.StatusOK
	}
	if len(g.body) < 8<<10 {
		g.body = append(g.body, b...)
	}
	return len(b), nil
}

// finish writes the trailers-only gRPC answer: HTTP 200, the gRPC code of
// the HTTP status, the problem's detail as grpc-message.
func (g *grpcAnswer) finish() {
	h := g.w.Header()
	var doc struct{ Title, Detail string }
	_ = json.Unmarshal(g.body, &doc) // problem+json; otherwise the status text
	msg := doc.Detail
	if msg == "" {
		msg = doc.Title
	}
	if msg == "" {
		msg = http.StatusText(g.status)
	}
	for _, k := range [...]string{"Content-Length", "Content-Encoding", "Content-Language", "Etag", "Last-Modified"} {
		delete(h, k)
	}
	ct := "application/grpc"
	if v := g.r.Header.Get("Content-Type"); strings.HasPrefix(v, "application/grpc-web") {
		ct = v // gRPC-Web clients read its trailers-only answer in these headers
	}
	h.Set("Content-Type", ct)
	h.Set("Grpc-Status", strconv.Itoa(grpcCode(g.status)))
	h.Set("Grpc-Message", grpcPercentEncode(msg))
	g.w.WriteHeader(http.StatusOK)
}

// grpcPercentEncode encodes a grpc-message value as the gRPC over HTTP/2
// specification says: bytes outside printable ASCII, and '%', as %XX.
func grpcPercentEncode(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '%' {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '%' {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}
