package idp_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/idp/idptest"
)

// Protect a whole mux: every path but /health needs a valid token, and
// POST /admin/ also needs the realm role "admin".
func Example() {
	provider, err := idptest.Start(idptest.Options{}) // your Keycloak in production
	if err != nil {
		log.Fatal(err)
	}
	defer provider.Close()

	p, err := idp.New(context.Background(), idp.Config{
		ServerURL:     provider.URL, // e.g. https://sso.example.com
		Realm:         "demo",
		ClientID:      "shortener",
		ExcludedPaths: []string{"/health"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	_ = p.WaitReady(context.Background())

	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.Handle("GET /me", p.WithUser(func(w http.ResponseWriter, r *http.Request, u *idp.User) {
		fmt.Fprintf(w, "hello %s", u.PreferredUsername)
	}))
	mux.Handle("POST /admin/", p.Require(idp.RequireRoles(idp.MatchAll, "admin"))(http.NotFoundHandler()))
	srv := httptest.NewServer(p.Middleware(mux))
	defer srv.Close()

	token := provider.Mint(provider.UserClaims("shortener", "alice", "creator"))
	req, _ := http.NewRequest("GET", srv.URL+"/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))

	req, _ = http.NewRequest("POST", srv.URL+"/admin/users", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	// Output:
	// 200 hello alice
	// 403
}

// Verify a token outside of HTTP, e.g. from a message header.
func ExamplePlugin_Verify() {
	provider, err := idptest.Start(idptest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer provider.Close()
	p, _ := idp.New(context.Background(), idp.Config{
		ServerURL:         provider.URL,
		Realm:             "demo",
		ClientID:          "shortener",
		OptionalAudiences: []string{"svc-reporter"}, // accept this service's client_credentials tokens
	})
	defer p.Close()
	_ = p.WaitReady(context.Background())

	svc := provider.Mint(provider.ServiceClaims(idptest.Client{ID: "svc-reporter", RealmRoles: []string{"creator"}}))
	tp, err := p.Verify(context.Background(), svc)
	fmt.Println(tp.PreferredUsername, tp.AuthorizedParty, err)
	// Output: service-account-svc-reporter svc-reporter <nil>
}

// Guards combine: ALL is the default strategy, ANY needs one item.
func ExampleRequireClientRoles() {
	u := &idp.User{ClientRoles: map[string][]string{"shortener": {"editor"}}}
	fmt.Println(idp.RequireClientRoles("shortener", idp.MatchAny, "editor", "admin").Allow(u))
	fmt.Println(idp.RequireClientRoles("shortener", idp.MatchAll, "editor", "admin").Allow(u))
	// Output:
	// true
	// false
}

// Rules on any claim: an Entra ID tenant and a verified e-mail domain. A
// refusal names its clause in the 403 body, never the token's value.
func ExampleRequireClaim() {
	provider, err := idptest.Start(idptest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer provider.Close()
	p, err := idp.New(context.Background(), idp.Config{ServerURL: provider.URL, Realm: "demo", ClientID: "shortener"})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	_ = p.WaitReady(context.Background())

	h := p.Require(
		idp.RequireClaim("tid", "9188040d-6c67-4c5b-b112-36a304b66dad"),
		idp.RequireEmailDomains("example.com"),
	)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "welcome") }))

	for _, tid := range []string{"9188040d-6c67-4c5b-b112-36a304b66dad", "another-tenant"} {
		claims := provider.UserClaims("shortener", "alice") // alice@example.com, email_verified
		claims["tid"] = tid
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Authorization", "Bearer "+provider.Mint(claims))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Print(rec.Code, " ", rec.Body.String())
		if rec.Code == http.StatusOK {
			fmt.Println()
		}
	}
	// Output:
	// 200 welcome
	// 403 {"type":"about:blank","title":"Forbidden","status":403,"detail":"the token lacks a required claim value","clause":"claims:tid"}
}
