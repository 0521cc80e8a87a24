package config

import (
	"testing"
	"time"

	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

// The effective configuration shows what each app gets: a zero transport
// setting of an upstreams entry is the upstream section's (it printed
// 0s), its own settings stay, and the File is not changed.
func TestEffectiveUpstreamsInherit(t *testing.T) {
	f := validConfig()
	f.Upstream = proxy.UpstreamConfig{Timeout: 12 * time.Second, MaxIdleConnsPerHost: 7, IdleTimeout: 3 * time.Second, CAFile: "ca.pem"}
	f.Upstreams = []proxy.UpstreamRoute{
		{Match: "a.example.com/", UpstreamConfig: proxy.UpstreamConfig{URL: "http://127.0.0.1:8001"}},
		{Match: "b.example.com/", UpstreamConfig: proxy.UpstreamConfig{URL: "http://127.0.0.1:8002", Timeout: time.Minute, ClientCertFile: "c.pem", ClientKeyFile: "k.pem"}},
	}
	ups, _ := f.Effective()["upstreams"].([]any)
	if len(ups) != 2 {
		t.Fatalf("upstreams = %#v", f.Effective()["upstreams"])
	}
	a, b := ups[0].(map[string]any), ups[1].(map[string]any)
	for k, want := range map[string]any{"timeout": "12s", "max_idle_conns_per_host": 7, "idle_timeout": "3s", "ca_file": "ca.pem"} {
		if a[k] != want {
			t.Errorf("a: %s = %v, want %v (the upstream section's)", k, a[k], want)
		}
	}
	for k, want := range map[string]any{"timeout": "1m0s", "idle_timeout": "3s", "ca_file": "", "client_cert_file": "c.pem"} {
		if b[k] != want {
			t.Errorf("b: %s = %v, want %v", k, b[k], want)
		}
	}
	if f.Upstreams[0].Timeout != 0 {
		t.Error("Effective changed the File's upstreams")
	}
}

// Each app's identity headers are shown as it gets them: the headers
// section's where the entry sets none (they printed null), its own
// overrides ("" disables a header) where it does.
func TestEffectiveUpstreamsInheritHeaders(t *testing.T) {
	f := validConfig()
	f.Headers.User = "X-Remote-User"
	f.Headers.ForwardToken = false
	off, user := "", "X-App-User"
	f.Upstreams = []proxy.UpstreamRoute{
		{Match: "a.example.com/", UpstreamConfig: proxy.UpstreamConfig{URL: "http://127.0.0.1:8001"}},
		{Match: "b.example.com/", UpstreamConfig: proxy.UpstreamConfig{URL: "http://127.0.0.1:8002"}, Headers: proxy.UpstreamHeaders{User: &user, Email: &off}},
	}
	ups, _ := f.Effective()["upstreams"].([]any)
	if len(ups) != 2 {
		t.Fatalf("upstreams = %#v", f.Effective()["upstreams"])
	}
	for i, want := range []map[string]any{
		{"user": "X-Remote-User", "forward_token": false, "email": f.Headers.Email, "roles": f.Headers.Roles, "preferred_username": f.Headers.PreferredUsername},
		{"user": "X-App-User", "forward_token": false, "email": "", "roles": f.Headers.Roles, "preferred_username": f.Headers.PreferredUsername},
	} {
		h, _ := ups[i].(map[string]any)["headers"].(map[string]any)
		for k, w := range want {
			if h[k] != w {
				t.Errorf("upstreams[%d].headers.%s = %#v, want %#v", i, k, h[k], w)
			}
		}
	}
	if f.Upstreams[0].Headers.User != nil {
		t.Error("Effective changed the File's upstreams")
	}
}
