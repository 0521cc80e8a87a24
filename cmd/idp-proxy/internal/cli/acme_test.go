package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// acmeDomain is the name the ACME tests obtain certificates for; the
// tests' DNS server resolves it to 127.0.0.1 for Pebble.
const acmeDomain = "app.example.test"

// acmeConfig writes a configuration serving acmeDomain on listen with
// certificates from p, and the tls.acme keys of acme (indented YAML).
func acmeConfig(t *testing.T, idpSrv *idptest.Server, upstream, listen string, p *pebble, acme string) string {
	t.Helper()
	return writeConfig(t, idpSrv, "", fmt.Sprintf(`upstreams:
  - {match: %s/, url: %q}
tls:
  acme:
    domains: [%s]
    email: ops@example.test
    directory_url: %s
    directory_ca_file: %s
%s`, acmeDomain, upstream, acmeDomain, p.directory, p.caFile, acme))
}

// withListen replaces the listen address of a config written by
// writeConfig.
func withListen(t *testing.T, path, listen string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "listen: 127.0.0.1:0\n", "listen: "+listen+"\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serverCert makes a TLS handshake with the proxy at addr for acmeDomain,
// verified against Pebble's root, and returns the certificate served. The
// first handshake waits for the whole ACME order.
func serverCert(t *testing.T, addr string, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{ServerName: acmeDomain, RootCAs: roots}}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("TLS handshake for %s with %s: %v", acmeDomain, addr, err)
	}
	defer c.Close()
	return c.(*tls.Conn).ConnectionState().PeerCertificates[0]
}

// httpsGet sends GET https://acmeDomain/path to the proxy at addr.
func httpsGet(t *testing.T, addr, path string, roots *x509.CertPool) int {
	t.Helper()
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get("https://" + acmeDomain + path)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func healthUpstream(t *testing.T) string {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(up.Close)
	return up.URL
}

// The proxy obtains its certificate from the CA by TLS-ALPN-01 on its own
// listener at the first handshake, serves HTTPS with it, and after a
// restart serves the same certificate from its cache directory without a
// second order.
func TestACMEIssueThenRestartReusesCache(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	listen := freeAddr(t)
	p := startPebble(t, pebbleOptions{TLSPort: portOf(t, listen), HTTPPort: portOf(t, freeAddr(t))})
	cache := t.TempDir()
	cfg := withListen(t, acmeConfig(t, idpSrv, healthUpstream(t), listen, p, "    cache_dir: "+cache+"\n"), listen)

	_, _, logs, stop := startServe(t, nil, "-c", cfg)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("idp-proxy:\n%s", logs.String())
		}
	})
	first := serverCert(t, listen, p.roots)
	if len(first.DNSNames) != 1 || first.DNSNames[0] != acmeDomain {
		t.Fatalf("certificate names %v, want [%s]", first.DNSNames, acmeDomain)
	}
	if n := p.orders(); n != 1 {
		t.Fatalf("orders after issuance: %d, want 1", n)
	}
	if code := httpsGet(t, listen, "/health", p.roots); code != http.StatusOK {
		t.Fatalf("GET https://%s/health: %d\n%s", acmeDomain, code, logs.String())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(cache)
	if len(entries) == 0 {
		t.Fatal("the cache directory is empty after issuance")
	}

	startServe(t, nil, "-c", cfg)
	again := serverCert(t, listen, p.roots)
	if again.SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatalf("after a restart the certificate changed (serial %x, was %x): the cache was not used", again.SerialNumber, first.SerialNumber)
	}
	if n := p.orders(); n != 1 {
		t.Fatalf("orders after a restart: %d, want still 1", n)
	}
}

// With tls.acme.http_listen the HTTP-01 challenge is answered there (the
// CA's TLS-ALPN-01 port reaches nothing here, so only HTTP-01 can
// succeed), and every other plain-HTTP request is redirected to https.
func TestACMEHTTP01AndRedirect(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	listen, httpListen := freeAddr(t), freeAddr(t)
	p := startPebble(t, pebbleOptions{TLSPort: portOf(t, freeAddr(t)), HTTPPort: portOf(t, httpListen)})
	cfg := withListen(t, acmeConfig(t, idpSrv, healthUpstream(t), listen, p,
		fmt.Sprintf("    cache_dir: %s\n    http_listen: %s\n", t.TempDir(), httpListen)), listen)
	_, _, logs, _ := startServe(t, nil, "-c", cfg)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("idp-proxy:\n%s", logs.String())
		}
	})

	req, _ := http.NewRequest(http.MethodGet, "http://"+httpListen+"/health?x=1", nil)
	req.Host = acmeDomain
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "https://"+acmeDomain+"/health?x=1" {
		t.Fatalf("plain HTTP: %d Location %q, want a redirect to https", resp.StatusCode, resp.Header.Get("Location"))
	}
	cert := serverCert(t, listen, p.roots)
	if cert.DNSNames[0] != acmeDomain {
		t.Fatalf("certificate names %v", cert.DNSNames)
	}
	if !strings.Contains(p.logs.String(), "Attempting to validate w/ HTTP:") {
		t.Errorf("pebble's log shows no http-01 validation")
	}
}

// With renew_before longer than the certificates' lifetime (1 h here),
// a certificate is renewed as soon as it is obtained: the proxy serves a
// new one, without a restart, while the first is still valid.
func TestACMERenewsBeforeExpiry(t *testing.T) {
	idpSrv := idptest.NewServer(t)
	listen := freeAddr(t)
	p := startPebble(t, pebbleOptions{TLSPort: portOf(t, listen), HTTPPort: portOf(t, freeAddr(t)), Validity: time.Hour})
	cfg := withListen(t, acmeConfig(t, idpSrv, healthUpstream(t), listen, p,
		fmt.Sprintf("    cache_dir: %s\n    renew_before: 2h\n", t.TempDir())), listen)
	startServe(t, nil, "-c", cfg)

	first := serverCert(t, listen, p.roots)
	if life := first.NotAfter.Sub(first.NotBefore); life > time.Hour+time.Minute {
		t.Fatalf("pebble issued a certificate for %s, want 1h", life)
	}
	var renewed *x509.Certificate
	waitForWithin(t, "a renewed certificate", 2*time.Minute, func() bool {
		renewed = serverCert(t, listen, p.roots)
		return renewed.SerialNumber.Cmp(first.SerialNumber) != 0
	})
	if !time.Now().Before(first.NotAfter) {
		t.Fatalf("renewed after the first certificate expired (%s)", first.NotAfter)
	}
	if n := p.orders(); n < 2 {
		t.Fatalf("orders: %d, want a second one for the renewal", n)
	}
}

// waitForWithin is waitFor with its own bound.
func waitForWithin(t *testing.T, what string, within time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %s", what, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// With tls.acme.cache: redis, replicas share the account, the challenge
// answers and the certificate: replica A orders it while the CA's
// TLS-ALPN-01 connection reaches replica B (as behind a load balancer),
// which answers from Redis; B then serves the same certificate without
// an order of its own.
func TestACMERedisCacheSharedByReplicas(t *testing.T) {
	ru := os.Getenv("TEST_REDIS_URL")
	if ru == "" {
		if os.Getenv("IDP_REQUIRE_REDIS") != "" {
			t.Fatal("IDP_REQUIRE_REDIS is set but TEST_REDIS_URL is not")
		}
		t.Skip("TEST_REDIS_URL not set (e.g. redis://127.0.0.1:6379/0)")
	}
	idpSrv := idptest.NewServer(t)
	listenA, listenB := freeAddr(t), freeAddr(t)
	p := startPebble(t, pebbleOptions{TLSPort: portOf(t, listenB), HTTPPort: portOf(t, freeAddr(t))})
	upstream := healthUpstream(t)
	prefix := fmt.Sprintf("idp-test-acme-%d:", time.Now().UnixNano())
	t.Cleanup(func() { deleteRedisPrefix(t, ru, prefix) })
	replica := func(listen string) string {
		return withListen(t, acmeConfig(t, idpSrv, upstream, listen, p,
			fmt.Sprintf("    cache: redis\nsession: {redis_url: %q, redis_prefix: %q}\n", ru, prefix)), listen)
	}
	startServe(t, nil, "-c", replica(listenA))
	startServe(t, nil, "-c", replica(listenB))
	first := serverCert(t, listenA, p.roots)
	second := serverCert(t, listenB, p.roots)
	if second.SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Fatalf("the second replica serves another certificate (serial %x, first %x)", second.SerialNumber, first.SerialNumber)
	}
	if n := p.orders(); n != 1 {
		t.Fatalf("orders for two replicas: %d, want 1", n)
	}
	if code := httpsGet(t, listenB, "/health", p.roots); code != http.StatusOK {
		t.Fatalf("GET https://%s/health on the second replica: %d", acmeDomain, code)
	}
}

// deleteRedisPrefix removes the keys a test left under prefix.
func deleteRedisPrefix(t *testing.T, ru, prefix string) {
	opts, err := redis.ParseURL(ru)
	if err != nil {
		t.Error(err)
		return
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background() // a cleanup: t.Context is done
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err == nil && len(keys) > 0 {
		err = rdb.Del(ctx, keys...).Err()
	}
	if err != nil {
		t.Errorf("cleaning Redis: %v", err)
	}
}

// TestReadmeAutomaticCertificates runs `idp-proxy check-config` on the
// configuration of the README's "Automatic certificates" section.
func TestReadmeAutomaticCertificates(t *testing.T) {
	b, err := os.ReadFile("../../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Automatic certificates\n")
	if !ok {
		t.Fatal(`README.md has no "## Automatic certificates" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	if !ok {
		t.Fatal("the section has no YAML block")
	}
	block, _, _ = strings.Cut(block, "```")
	path := filepath.Join(t.TempDir(), "idp-proxy.yaml")
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, deps{}, "check-config", path)
	if err != nil || !strings.Contains(out, "configuration OK") || !strings.Contains(out, "certificates by ACME for app.example.com") {
		t.Fatalf("check-config: %v\n%s", err, out)
	}
	// The same file with certificate files too is refused at load.
	both := strings.Replace(block, "tls:\n", "tls:\n  cert_file: /etc/idp-proxy/tls.pem\n  key_file: /etc/idp-proxy/tls.key\n", 1)
	if err := os.WriteFile(path, []byte(both), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, deps{}, "check-config", path); err == nil || !strings.Contains(err.Error(), "exclusive") {
		t.Fatalf("check-config with files and ACME: %v", err)
	}
}
