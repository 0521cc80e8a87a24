package proxy

import (
	"strings"
	"testing"
)

func TestRequestID(t *testing.T) {
	idpSrv := newProvider(t)
	up := newUpstream(t)
	_, px := startProxy(t, testConfig(idpSrv, up.URL), Options{}, true)
	resp, _ := do(t, "GET", px.URL+"/health", "", map[string]string{"X-Request-Id": "abc-123.x:y"}, "")
	if resp.Header.Get("X-Request-Id") != "abc-123.x:y" || up.last(t).Header.Get("X-Request-Id") != "abc-123.x:y" {
		t.Errorf("valid id not kept: %q / %q", resp.Header.Get("X-Request-Id"), up.last(t).Header.Get("X-Request-Id"))
	}
	ids := map[string]bool{}
	for _, sent := range []string{"", "bad id with spaces", strings.Repeat("a", 200), "<script>"} {
		resp, _ := do(t, "GET", px.URL+"/health", "", map[string]string{"X-Request-Id": sent}, "")
		id := resp.Header.Get("X-Request-Id")
		if id == "" || id == sent || !validRequestID(id) || ids[id] || up.last(t).Header.Get("X-Request-Id") != id {
			t.Errorf("sent %q: got %q", sent, id)
		}
		ids[id] = true
	}
	// A rejected request gets an id too.
	resp, _ = do(t, "POST", px.URL+"/shorten", "", nil, "")
	if resp.Header.Get("X-Request-Id") == "" {
		t.Error("401 without X-Request-Id")
	}
}
