package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"github.com/idp-proxy/idp-proxy/internal/testsupport"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writePEM writes the test server's certificate as a CA file.
func writePEM(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// An https upstream is reached with the configured CA, and with the
// configured client certificate when it demands one (mutual TLS).
func TestUpstreamTLS(t *testing.T) {
	idpSrv := newProvider(t)
	// A self-signed client certificate.
	client := testsupport.SelfSigned(t, "idp-proxy", x509.ExtKeyUsageClientAuth)
	dir := t.TempDir()
	certFile, keyFile, clientPool := client.CertFile, client.KeyFile, client.Pool

	mtls := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "client=%d", len(r.TLS.PeerCertificates))
	}))
	mtls.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientPool}
	mtls.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	mtls.StartTLS()
	t.Cleanup(mtls.Close)
	ca := writePEM(t, mtls)

	for _, tc := range []struct {
		name           string
		ca, cert, key  string
		status         int
		body, newError string
	}{
		{name: "CA and client certificate", ca: ca, cert: certFile, key: keyFile, status: 200, body: "client=1"},
		{name: "CA without the client certificate", ca: ca, status: 502},
		{name: "system roots only", cert: certFile, key: keyFile, status: 502},
		{name: "missing CA file", ca: filepath.Join(dir, "nope.pem"), newError: "Upstream.CAFile"},
		{name: "CA file without PEM", ca: keyFile + ".none", newError: "Upstream.CAFile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(idpSrv, mtls.URL)
			cfg.Upstream.CAFile, cfg.Upstream.ClientCertFile, cfg.Upstream.ClientKeyFile = tc.ca, tc.cert, tc.key
			if tc.newError != "" {
				if strings.HasSuffix(tc.ca, ".none") {
					_ = os.WriteFile(tc.ca, []byte("not pem"), 0o600)
				}
				if _, err := newProxy(t, cfg, Options{}); err == nil || !strings.Contains(err.Error(), tc.newError) {
					t.Fatalf("New: %v, want an error naming %s", err, tc.newError)
				}
				return
			}
			_, px := startProxy(t, cfg, Options{}, true)
			resp, body := do(t, "GET", px.URL+"/health", "", nil, "")
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.body) {
				t.Fatalf("%d %s, want %d %s", resp.StatusCode, body, tc.status, tc.body)
			}
		})
	}
	cfg := testConfig(idpSrv, mtls.URL)
	cfg.Upstream.ClientCertFile = certFile
	if _, err := Compile(cfg.Config, cfg.IDP); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Fatalf("half a client certificate: %v", err)
	}
}
