package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/testsupport"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// rawExchange writes req on a new connection to addr and reads one
// response; it then reports whether the server closed the connection.
func rawExchange(t *testing.T, addr, req string) (*http.Response, string, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// A server that keeps the connection open lets us read nothing until
	// the deadline; a closed one gives EOF at once.
	_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, err = br.ReadByte()
	var ne net.Error
	closed := errors.Is(err, io.EOF) || (err != nil && !(errors.As(err, &ne) && ne.Timeout()))
	return resp, string(body), closed
}

func TestFramingAndBodies(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	addr := px.Listener.Addr().String()
	auth := "Authorization: Bearer " + idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator")) + "\r\n"
	head := "POST /shorten HTTP/1.1\r\nHost: x\r\n" + auth

	t.Run("plain request keeps the connection", func(t *testing.T) {
		resp, _, closed := rawExchange(t, addr, head+"Content-Length: 3\r\n\r\nabc")
		if resp.StatusCode != 200 || closed {
			t.Fatalf("status %d, closed %v; want 200 on a kept-alive connection", resp.StatusCode, closed)
		}
	})
	t.Run("content-length and transfer-encoding: answered, then closed", func(t *testing.T) {
		resp, _, closed := rawExchange(t, addr, head+"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
		if !closed || !resp.Close {
			t.Fatalf("status %d, Connection: close %v, closed %v: the connection must close after a CL+TE request", resp.StatusCode, resp.Close, closed)
		}
		if got := up.last(t).Body; got != "abc" {
			t.Errorf("upstream body %q, want the chunked body", got)
		}
	})
	for name, body := range map[string]string{
		"bare LF chunk lines":     "3\nabc\n0\n\n",
		"overflowing chunk size":  "fffffffffffffffffffffffff\r\nabc\r\n0\r\n\r\n",
		"chunk size not hex":      "zz\r\nabc\r\n0\r\n\r\n",
		"missing CRLF after data": "3\r\nabcXY0\r\n\r\n",
	} {
		t.Run("malformed chunked body: "+name, func(t *testing.T) {
			resp, b, closed := rawExchange(t, addr, head+"Transfer-Encoding: chunked\r\n\r\n"+body)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(b, "malformed") {
				t.Fatalf("%d %s %s, want 400 problem+json blaming the body", resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
			if !closed {
				t.Error("the connection stays open after a malformed body")
			}
		})
	}
}

func TestUpstreamCannotSetProxyCookies(t *testing.T) {
	idpSrv := newProvider(t)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, c := range []string{
			"access_token=forged; Path=/", "idp_login=x; Path=/auth", "__Host-access_token=y; Path=/; Secure",
			" idp_login =z", "app=kept; Path=/", "access_token_other=kept",
		} {
			w.Header().Add("Set-Cookie", c)
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(upstream.Close)
	cfg := testConfig(idpSrv, upstream.URL)
	cfg.IDP.TokenLocation = "cookie"
	cfg.IDP.ClientSecret = "x"
	cfg.IDP.IncludeRoutes = true
	cfg.IDP.RedirectURI = "http://127.0.0.1:4180/auth/callback"
	cfg.IDP.SessionSecret = []byte(strings.Repeat("s", 32))
	_, px := startProxy(t, cfg, Options{}, true)
	resp, _ := do(t, "GET", px.URL+"/health", "", nil, "")
	got := resp.Header.Values("Set-Cookie")
	want := []string{"app=kept; Path=/", "access_token_other=kept"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Set-Cookie passed to the client: %q, want only %q", got, want)
	}
}

// FuzzChunkedBody sends arbitrary chunked bodies through a real listener:
// the answer is the upstream's (200) or the client's fault (400), never a
// 5xx, and the connection is always closed after a chunked request.
func FuzzChunkedBody(f *testing.F) {
	for _, seed := range []string{
		"3\r\nabc\r\n0\r\n\r\n", "3\nabc\n0\n\n", "fffffffffffffffffffffffff\r\nabc\r\n0\r\n\r\n",
		"zz\r\nabc\r\n0\r\n\r\n", "3;ext=1\r\nabc\r\n0\r\nTrailer: x\r\n\r\n", "0\r\n\r\n", "3\r\nabcXY0\r\n\r\n",
	} {
		f.Add(seed)
	}
	idpSrv := idptest.NewServer(f, idptest.Options{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, "ok")
	}))
	f.Cleanup(upstream.Close)
	p, err := newProxy(f, testConfig(idpSrv, upstream.URL), Options{})
	if err != nil {
		f.Fatal(err)
	}
	srv := httptest.NewServer(p)
	f.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	f.Fuzz(func(t *testing.T, body string) {
		if strings.Contains(body, "\r\n\r\n0") || len(body) > 4096 {
			t.Skip()
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "POST /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"+body)
		if cw, ok := c.(*net.TCPConn); ok {
			_ = cw.CloseWrite() // an incomplete body ends here, not at a timeout
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return // the server may drop a request it cannot parse at all
		}
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Fatalf("body %q: %d", body, resp.StatusCode)
		}
		if !resp.Close {
			t.Fatalf("body %q: %d without Connection: close", body, resp.StatusCode)
		}
	})
}

// A client that sends its body slower than the server's read timeout gets
// 408 problem+json (its fault), never 502 (which blames the upstream).
func TestSlowRequestBodyIs408(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	p, err := newProxy(t, testConfig(idpSrv, up.URL), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := p.Plugin().WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(p)
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	auth := "Authorization: Bearer " + idpSrv.Mint(idpSrv.UserClaims("shortener", "alice", "creator")) + "\r\n"
	// 10 bytes announced, 3 sent: the rest never comes.
	resp, b := testsupport.SlowBody(t, srv.Listener.Addr().String(), "POST /shorten HTTP/1.1\r\nHost: x\r\n"+auth+"Content-Length: 10\r\n\r\nabc")
	if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("slow body: %d %s %s, want 408 problem+json", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}
