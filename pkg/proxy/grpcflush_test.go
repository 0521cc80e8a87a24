package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// flushWindow is how long the model upstream's empty body keeps the
// forwarder copying: long enough for an immediate flush to come first
// (it comes within microseconds), short enough to keep the test quick.
const flushWindow = 200 * time.Millisecond

// flushSignal is a response recorder that tells, on flushed, when the
// forwarder flushed.
type flushSignal struct {
	*httptest.ResponseRecorder
	flushed chan struct{}
	once    sync.Once
}

func (f *flushSignal) Flush() {
	f.once.Do(func() { close(f.flushed) })
	f.ResponseRecorder.Flush()
}

// slowEmptyBody is a body without bytes whose end comes once the writer
// flushed, or after flushWindow: the forwarder then copies for as long as
// a descheduled handler goroutine might.
type slowEmptyBody struct{ flushed <-chan struct{} }

func (b slowEmptyBody) Read([]byte) (int, error) {
	select {
	case <-b.flushed:
	case <-time.After(flushWindow):
	}
	return 0, io.EOF
}

func (slowEmptyBody) Close() error { return nil }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The gRPC forwarder never flushes the headers of an answer without a
// body: the server must send them with the end of the stream (one HEADERS
// frame with END_STREAM, gRPC's trailers-only form), which a flush before
// the handler returns prevents. ReverseProxy with a negative
// FlushInterval flushes the headers at once from a timer, racing with the
// end of the copy (golang/go#56317); here the copy lasts until that flush
// or flushWindow, so the race is always lost without the fix.
func TestGRPCForwardTrailersOnlyNeverFlushed(t *testing.T) {
	p, err := newProxy(t, testConfig(newProvider(t), "http://127.0.0.1:1"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	target := &url.URL{Scheme: "http", Host: "upstream.test"}
	rewrite := func(pr *httputil.ProxyRequest) { pr.SetURL(target) }
	for _, tc := range []struct {
		name          string
		contentLength int64
		body          string
		wantFlush     bool
	}{
		{name: "trailers-only", contentLength: 0},
		// Messages still go out at once, whatever the framing.
		{name: "stream", contentLength: -1, body: "\x00\x00\x00\x00\x00", wantFlush: true},
		{name: "message with a length", contentLength: 5, body: "\x00\x00\x00\x00\x00", wantFlush: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &flushSignal{ResponseRecorder: httptest.NewRecorder(), flushed: make(chan struct{})}
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				var body io.ReadCloser = slowEmptyBody{flushed: w.flushed}
				if tc.body != "" {
					body = io.NopCloser(io.MultiReader(strings.NewReader(tc.body), slowEmptyBody{flushed: w.flushed}))
				}
				h := http.Header{"Content-Type": {"application/grpc"}}
				if tc.contentLength == 0 {
					h.Set("Grpc-Status", "8")
					h.Set("Grpc-Message", "quota")
				}
				return &http.Response{StatusCode: 200, Proto: "HTTP/2.0", ProtoMajor: 2, Header: h,
					ContentLength: tc.contentLength, Body: body, Request: r}, nil
			})
			g := p.newGRPCForward(rt, UpstreamConfig{}, rewrite)
			r := httptest.NewRequest("POST", "/grpc.testing.TestService/UnaryCall", strings.NewReader("\x00\x00\x00\x00\x00"))
			r.Header.Set("Content-Type", "application/grpc")
			g.serve(w, r)
			if w.Flushed != tc.wantFlush {
				t.Errorf("flushed %v, want %v", w.Flushed, tc.wantFlush)
			}
			if got := w.Header().Get("Grpc-Status"); tc.contentLength == 0 && got != "8" {
				t.Errorf("grpc-status %q", got)
			}
		})
	}
}
