package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The peer configuration: oauth2-proxy, built from the Go module proxy at a
// fixed version into the run's temporary bin directory (never through this
// module's go.mod), run as a bearer-token validating proxy.
const (
	o2pModule  = "github.com/oauth2-proxy/oauth2-proxy/v7"
	o2pVersion = "v7.15.6"
	o2pName    = "oauth2-proxy"
)

// peerBuild says how the peer build went, for the results page.
type peerBuild struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Built   bool   `json:"built"`
	Took    string `json:"took,omitempty"`
	Note    string `json:"note,omitempty"`
}

// buildPeers builds oauth2-proxy when -peers asks for it (on; auto: always
// in a full run, with -smoke only when its module is already in the module
// cache), into dir, and returns the binary's path, or "" and why not.
func buildPeers(ctx context.Context, o options, dir string) (string, peerBuild) {
	pb := peerBuild{Name: o2pName, Version: o2pVersion}
	timeout := 10 * time.Minute
	switch o.peers {
	case "off":
		pb.Note = "-peers off"
		return "", pb
	case "on":
	default: // auto
		if o.smoke {
			if !moduleCached(ctx, o2pModule, o2pVersion) {
				pb.Note = fmt.Sprintf("smoke run: %s@%s is not in the module cache, not built (-peers on builds it)", o2pModule, o2pVersion)
				return "", pb
			}
			timeout = 90 * time.Second
		}
	}
	logf("building %s@%s into %s (at most %v)", o2pModule, o2pVersion, dir, timeout)
	start := time.Now()
	path, err := buildOAuth2Proxy(ctx, dir, timeout)
	pb.Took = time.Since(start).Round(100 * time.Millisecond).String()
	if err != nil {
		pb.Note = fmt.Sprintf("build failed after %s, its cases are skipped: %v", pb.Took, err)
		logf("%s: %s", o2pName, pb.Note)
		return "", pb
	}
	pb.Built = true
	logf("built %s in %s", o2pName, pb.Took)
	return path, pb
}

// moduleCached reports whether module@version's source is in the module
// cache, so that building it needs no download.
func moduleCached(ctx context.Context, module, version string) bool {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMODCACHE").Output()
	if err != nil {
		return false
	}
	fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), escapeModulePath(module)+"@"+version))
	return err == nil && fi.IsDir()
}

// escapeModulePath is the module cache's case encoding ("!x" for "X").
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// buildOAuth2Proxy runs go install module@version with GOBIN=dir, from dir
// (outside this module, whose go.mod is not read nor written). When go
// install refuses the module (replace directives), it downloads the module
// and builds it in its own directory.
func buildOAuth2Proxy(ctx context.Context, dir string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	env := append(os.Environ(), "GOBIN="+dir, "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=-buildvcs=false")
	bin := filepath.Join(dir, o2pName)
	goCmd := func(wd string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Env = wd, env
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			return out, fmt.Errorf("go %s: timed out after %v", args[0], timeout)
		}
		if err != nil {
			return out, fmt.Errorf("go %s: %v: %s", args[0], err, firstLine(string(out)))
		}
		return out, nil
	}
	out, err := goCmd(dir, "install", o2pModule+"@"+o2pVersion)
	if err == nil {
		return bin, nil
	}
	if ctx.Err() != nil || !strings.Contains(string(out), "replace") {
		return "", err
	}
	logf("%s: go install refused the module (%v); building it in its module directory", o2pName, err)
	out, err = goCmd(dir, "mod", "download", "-json", o2pModule+"@"+o2pVersion)
	if err != nil {
		return "", err
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download: %s %v", m.Error, err)
	}
	if _, err := goCmd(m.Dir, "build", "-o", bin, "."); err != nil {
		return "", err
	}
	return bin, nil
}

// startOAuth2Proxy runs oauth2-proxy in front of upURL as a bearer-token
// validating proxy for the provider's issuer (client ID = the tokens'
// audience), checks that it forwards a valid token and refuses invalid
// ones (401 or 403), and returns it with its URL and metrics URL.
func (h *harness) startOAuth2Proxy(upURL, issuer, clientID, valid string, invalid []string) (*proc, string, string, error) {
	addr, err := h.freeAddr()
	if err != nil {
		return nil, "", "", err
	}
	maddr, err := h.freeAddr()
	if err != nil {
		return nil, "", "", err
	}
	base := "http://" + addr
	p, err := h.start(o2pName, o2pName, false,
		"--http-address="+addr,
		"--metrics-address="+maddr,
		"--upstream="+upURL+"/",
		"--provider=oidc",
		"--oidc-issuer-url="+issuer,
		"--client-id="+clientID,
		"--client-secret=bench-client-secret",              // required; unused with bearer tokens
		"--cookie-secret=bench-cookie-secret-0123456789ab", // 32 bytes
		"--cookie-secure=false",
		"--redirect-url="+base+"/oauth2/callback",
		"--email-domain=*",
		"--skip-jwt-bearer-tokens=true",
		"--bearer-token-login-fallback=false", // an invalid token gets 403, not a login redirect
		"--insecure-oidc-allow-unverified-email=true",
		"--request-logging=false",
		"--auth-logging=false",
	)
	if err != nil {
		return nil, "", "", err
	}
	fail := func(err error) (*proc, string, string, error) {
		p.stop()
		return nil, "", "", err
	}
	if err := waitHTTP(p, base+"/ping", nil, is2xx, 30*time.Second); err != nil {
		return fail(err)
	}
	bearer := func(t string) http.Header { return http.Header{"Authorization": {"Bearer " + t}} }
	if err := waitHTTP(p, base+"/api/items", bearer(valid), is2xx, 20*time.Second); err != nil {
		return fail(fmt.Errorf("valid token not accepted: %w", err))
	}
	for _, bad := range invalid {
		if err := waitHTTP(p, base+"/api/items", bearer(bad), func(c int) bool { return c == 401 || c == 403 }, 5*time.Second); err != nil {
			return fail(fmt.Errorf("invalid token not refused with 401/403: %w", err))
		}
	}
	if _, err := gcCount("http://" + maddr + "/metrics"); err != nil {
		h.rep.note("%s: no GC counts: %v", o2pName, err)
		maddr = ""
	}
	if maddr == "" {
		return p, base, "", nil
	}
	return p, base, "http://" + maddr + "/metrics", nil
}
