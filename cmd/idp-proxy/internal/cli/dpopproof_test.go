package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// The README's proof-of-possession example: a key, a DPoP-bound token from
// the provider (RFC 9449 §5) and a proof for one request, which the
// plugin accepts once (RFC 9449 §4.3).
func TestDPoPProofAndBoundToken_RFC9449_5(t *testing.T) {
	idpSrv := idptest.NewServer(t, idptest.Options{Clients: []idptest.Client{svc}})
	cfg := writeConfig(t, idpSrv, "http://127.0.0.1:8000", "")
	keyFile := filepath.Join(t.TempDir(), "dpop.pem")
	jkt, _, err := run(t, deps{}, "dpop-proof", "--new-key", keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, deps{}, "dpop-proof", "--new-key", keyFile); err == nil {
		t.Fatal("--new-key overwrote a key")
	}
	env := []string{"IDP_PROXY_IDP_CLIENT_ID=" + svc.ID, "IDP_PROXY_IDP_CLIENT_SECRET=" + svc.Secret}
	out, _, err := run(t, deps{environ: env}, "-c", cfg, "token", "--dpop-key", keyFile)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(out)
	const url = "https://api.example.com/x"
	proof, _, err := run(t, deps{}, "dpop-proof", "--key", keyFile, "--method", "GET", "--url", url, "--token", tok)
	if err != nil {
		t.Fatal(err)
	}
	p, err := idp.New(context.Background(), idp.Config{ServerURL: idpSrv.URL, Realm: idpSrv.Realm, ClientID: "shortener",
		OptionalAudiences: []string{svc.ID}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	pres := idp.Presentation{Token: tok, DPoP: true, Mode: dpop.Allowed, Method: "GET", URL: url, Proofs: []string{strings.TrimSpace(proof)}}
	id, err := p.VerifyPresentation(context.Background(), pres)
	if err != nil {
		t.Fatalf("the bound token with its proof: %v", err)
	}
	if id.DPoPThumbprint() != strings.TrimSpace(jkt) || id.Payload.Type != "DPoP" {
		t.Fatalf("bound to %q (typ %q), the key is %q", id.DPoPThumbprint(), id.Payload.Type, jkt)
	}
	if _, err := p.Verify(context.Background(), tok); err == nil {
		t.Fatal("the bound token passed as a bearer token")
	}
	if _, _, err := run(t, deps{}, "dpop-proof", "--key", keyFile, "--method", "GET"); err == nil {
		t.Fatal("dpop-proof without --url")
	}
}
