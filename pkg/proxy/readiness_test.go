package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/faultnet"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// readyz fetches /readyz from ops and decodes its body.
func readyz(t *testing.T, ops string) (int, readinessReport, string) {
	t.Helper()
	resp, body := do(t, "GET", ops+"/readyz", "", nil, "")
	var rep readinessReport
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatalf("readyz body %q: %v", body, err)
	}
	return resp.StatusCode, rep, body
}

// until polls cond (a state of the proxy, not a duration) for at most
// ten seconds.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// One app of the upstreams list that refuses connections, or accepts
// them and never answers, is reported (degraded, 200, named with the
// reason) and does not make the replica unready: every other host keeps
// being served, and a readiness probe would otherwise pull every replica
// (they all share that app). Down and hanging give the same answer.
func TestReadyzOneAppOfManyDownOrHanging(t *testing.T) {
	s, _, _, v2 := manyAppsSetup(t)
	prov := newProvider(t)
	s.IDP.ServerURL, s.IDP.Realm = prov.URL, prov.Realm
	fn := faultnet.New(t, strings.TrimPrefix(v2.URL, "http://"))
	s.Upstreams[3].URL = "http://" + fn.Addr()
	p, px := startProxy(t, s, Options{}, true)
	ops := httptestServer(t, p.OpsHandler())
	if code, rep, body := readyz(t, ops); code != 200 || rep.Status != "ready" || len(rep.Upstreams) != 4 {
		t.Fatalf("readyz with every app up: %d %s", code, body)
	}
	alice := prov.Mint(prov.UserClaims("shortener", "alice", "creator"))
	for _, fault := range []struct {
		name        string
		apply, undo func()
		reason      string
	}{
		{"down", fn.Down, fn.Up, ""},
		{"hanging", fn.Freeze, fn.Thaw, "no answer within 1s"},
	} {
		fault.apply()
		code, rep, body := readyz(t, ops)
		if code != http.StatusOK || rep.Status != "degraded" || rep.UpstreamReachable {
			t.Errorf("%s: readyz %d %s, want 200 degraded", fault.name, code, body)
		}
		if u := rep.Upstreams[3]; u.Match != "api.test/v2/" || u.Reachable || u.Error == "" || !strings.Contains(u.Error, fault.reason) {
			t.Errorf("%s: the app's entry %+v, want api.test/v2/ unreachable with %q", fault.name, u, fault.reason)
		}
		for _, u := range rep.Upstreams[:3] {
			if !u.Reachable {
				t.Errorf("%s: %s reported unreachable: %s", fault.name, u.Match, u.Error)
			}
		}
		if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "api.test/v2/") {
			t.Errorf("%s: problems %q, want the one app named", fault.name, rep.Problems)
		}
		if resp, body := hostGet(t, px.URL, "a.test", "/x", alice, nil); resp.StatusCode != 200 {
			t.Errorf("%s: another app while api.test/v2/ is %s: %d %s", fault.name, fault.name, resp.StatusCode, body)
		}
		fault.undo()
		if code, rep, body := readyz(t, ops); code != 200 || rep.Status != "ready" {
			t.Errorf("after %s: readyz %d %s", fault.name, code, body)
		}
	}
}

// With one upstream (upstream.url, a sidecar's app) the app is part of
// the replica: not answering makes it not ready, whether it refuses
// connections or accepts them and hangs (a TCP connect alone called a
// hung app ready).
func TestReadyzSingleUpstreamDownOrHanging(t *testing.T) {
	up := newUpstream(t)
	fn := faultnet.New(t, strings.TrimPrefix(up.URL, "http://"))
	p, _ := startProxy(t, testConfig(newProvider(t), "http://"+fn.Addr()), Options{}, true)
	ops := httptestServer(t, p.OpsHandler())
	if code, _, body := readyz(t, ops); code != 200 {
		t.Fatalf("readyz: %d %s", code, body)
	}
	for _, fault := range []struct {
		name        string
		apply, undo func()
	}{{"down", fn.Down, fn.Up}, {"hanging", fn.Freeze, fn.Thaw}} {
		fault.apply()
		start := time.Now()
		code, rep, body := readyz(t, ops)
		if code != http.StatusServiceUnavailable || rep.Status != "not ready" || rep.UpstreamReachable || rep.Upstreams[0].Reachable {
			t.Errorf("%s: readyz %d %s, want 503 not ready", fault.name, code, body)
		}
		if took := time.Since(start); took > readinessTimeout+time.Second {
			t.Errorf("%s: readyz took %s, bound %s", fault.name, took, readinessTimeout)
		}
		fault.undo()
		if code, _, body := readyz(t, ops); code != 200 {
			t.Errorf("after %s: readyz %d %s", fault.name, code, body)
		}
	}
}

// A further issuer whose provider is down at start is reported with the
// reason; the replica is ready (the primary's keys are loaded) and serves
// the primary's tokens. The primary's keys missing is not ready, with the
// reason of the last fetch: the provider's HTTP status, or an issuer
// mismatch in its discovery document.
func TestReadyzIssuerKeysWithReason(t *testing.T) {
	company := newProvider(t)
	ci := idptest.NewServer(t, idptest.Options{PlainIssuer: true})
	ci.SetDown(true)
	up := newUpstream(t)
	cfg := testConfig(company, up.URL)
	cfg.IDP.Issuers = []idp.TrustedIssuer{{
		Name: "ci", IssuerURL: ci.Issuer, Audiences: []string{"https://github.com/example"},
		Claims: idp.ClaimMapping{Preset: idp.PresetGeneric},
	}}
	p, px := startProxy(t, cfg, Options{}, false)
	until(t, "the primary's keys and a failed fetch of ci's", func() bool {
		st := p.Plugin().Stats()
		return st.Issuers[0].Keys.Ready && st.Issuers[1].Keys.Failures > 0
	})
	ops := httptestServer(t, p.OpsHandler())
	code, rep, body := readyz(t, ops)
	if code != http.StatusOK || rep.Status != "degraded" || !rep.KeysLoaded {
		t.Fatalf("readyz with ci's provider down at start: %d %s, want 200 degraded", code, body)
	}
	if ir := rep.Issuers[1]; ir.Name != "ci" || ir.KeysLoaded || !strings.Contains(ir.Error, "503") {
		t.Errorf("ci's entry %+v, want keys not loaded with the provider's 503", ir)
	}
	if ir := rep.Issuers[0]; !ir.Primary || !ir.KeysLoaded || ir.Error != "" || ir.LastRefresh == nil {
		t.Errorf("the primary's entry %+v", ir)
	}
	tok := company.Mint(company.UserClaims("shortener", "alice", "creator"))
	if resp, body := do(t, "POST", px.URL+"/shorten", tok, nil, ""); resp.StatusCode != 200 {
		t.Errorf("a primary token while ci is down: %d %s", resp.StatusCode, body)
	}
	// ci's provider answers again: the error is gone with the next fetch.
	ci.SetDown(false)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	until(t, "ci's keys", func() bool { return p.Plugin().Refresh(ctx) == nil })
	if code, rep, body := readyz(t, ops); code != http.StatusOK || rep.Status != "ready" || !rep.Issuers[1].KeysLoaded || rep.Issuers[1].Error != "" {
		t.Errorf("readyz once ci answers: %d %s", code, body)
	}

	// The primary's provider names another issuer in its discovery
	// document: not ready, and the reason says so.
	liar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"issuer":"https://elsewhere.example/","jwks_uri":"https://elsewhere.example/keys"}`))
	}))
	t.Cleanup(liar.Close)
	cfg2 := testConfig(company, up.URL)
	cfg2.IDP.ServerURL, cfg2.IDP.Realm, cfg2.IDP.IssuerURL = "", "", liar.URL
	p2, _ := startProxy(t, cfg2, Options{}, false)
	until(t, "a failed fetch", func() bool { return p2.Plugin().Stats().Keys.Failures > 0 })
	if err := p2.Plugin().Stats().Keys.LastError; !errors.Is(err, idp.ErrDiscovery) {
		t.Errorf("Stats().Keys.LastError = %v, want ErrDiscovery", err)
	}
	code, rep, body = readyz(t, httptestServer(t, p2.OpsHandler()))
	if code != http.StatusServiceUnavailable || rep.KeysLoaded || !strings.Contains(rep.Issuers[0].Error, "elsewhere.example") ||
		len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "elsewhere.example") {
		t.Errorf("readyz with an issuer mismatch: %d %s", code, body)
	}
}
