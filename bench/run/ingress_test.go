package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWithoutAuthRequest derives nginx alone from the shipped
// deploy/ingress/nginx.conf: no verdict left, the same upstream blocks,
// keep-alive and proxy_pass; nginx -t accepts it when nginx is installed.
func TestWithoutAuthRequest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "ingress", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := withoutAuthRequest(string(b))
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"auth_request", "$idp_", "_idp_verify", "@idp_unauthenticated", "#"} {
		if strings.Contains(plain, gone) {
			t.Errorf("derived configuration still has %q:\n%s", gone, plain)
		}
	}
	for _, kept := range []string{"keepalive", "proxy_http_version 1.1;", `proxy_set_header Connection "";`, shippedApp, "location / {", "location /auth/ {"} {
		if strings.Contains(string(b), kept) && !strings.Contains(plain, kept) {
			t.Errorf("derived configuration lost %q:\n%s", kept, plain)
		}
	}
	if _, err := withoutAuthRequest("http { server { location / { proxy_pass http://x; } } }"); err == nil {
		t.Error("a configuration without auth_request was accepted")
	}
	bin := findNginx()
	if bin == "" {
		t.Skip("nginx is not installed: the derived configuration is not checked with nginx -t")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(plain), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-t", "-q", "-p", dir+"/", "-c", conf, "-e", "stderr").CombinedOutput(); err != nil {
		t.Errorf("nginx -t on the derived configuration: %v\n%s\n%s", err, out, plain)
	}
}
