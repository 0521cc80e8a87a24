package exchange

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// recordingEndpoint is a token endpoint that records the request it gets
// and answers doc.
func recordingEndpoint(t *testing.T, doc map[string]any) (*httptest.Server, *http.Request, *url.Values) {
	t.Helper()
	got := &http.Request{}
	form := &url.Values{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		*got = *r.Clone(context.Background())
		*form = r.PostForm
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	return srv, got, form
}

func goodDoc() map[string]any {
	return map[string]any{"access_token": "new", "issued_token_type": TokenTypeAccessToken, "token_type": "Bearer", "expires_in": 60}
}

// TestExchange_RFC8693_2_1_RequestParameters: the request is a form POST
// with grant_type the token-exchange URN, subject_token,
// subject_token_type (REQUIRED), requested_token_type the access-token
// URN, audience, and scope space-delimited (§2.1, RFC 6749 §3.3); the
// client authenticates with HTTP Basic whose ID and secret are
// form-urlencoded first (RFC 6749 §2.3.1).
func TestExchange_RFC8693_2_1_RequestParameters(t *testing.T) {
	srv, got, form := recordingEndpoint(t, goodDoc())
	ex, _ := New(Options{TokenURL: srv.URL, ClientID: "proxy:one", ClientSecret: "s ecret/+"})
	if _, err := ex.Exchange(context.Background(), Subject{Token: "caller"}, Target{Audience: "orders-api", Scopes: []string{"openid", "orders"}}); err != nil {
		t.Fatal(err)
	}
	want := url.Values{
		"grant_type":           {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token":        {"caller"},
		"subject_token_type":   {"urn:ietf:params:oauth:token-type:access_token"},
		"requested_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
		"audience":             {"orders-api"},
		"scope":                {"openid orders"},
	}
	for k, v := range want {
		if g := (*form)[k]; len(g) != 1 || g[0] != v[0] {
			t.Errorf("%s = %q, want %q", k, g, v)
		}
	}
	if got.Method != http.MethodPost || got.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		t.Errorf("%s %s", got.Method, got.Header.Get("Content-Type"))
	}
	id, secret, ok := got.BasicAuth()
	if !ok || id != url.QueryEscape("proxy:one") || secret != url.QueryEscape("s ecret/+") {
		t.Errorf("Basic %q %q, want both form-urlencoded", id, secret)
	}
	if form.Has("client_secret") {
		t.Error("the secret is in the form with client_secret_basic")
	}
	// Without audience and scopes, neither parameter is sent.
	ex.Exchange(context.Background(), Subject{Token: "other"}, Target{})
	if form.Has("audience") || form.Has("scope") {
		t.Errorf("empty target sent %v", *form)
	}
}

// TestExchange_RFC8693_2_2_1_AccessTokenRequired: a 200 without
// access_token is no token.
func TestExchange_RFC8693_2_2_1_AccessTokenRequired(t *testing.T) {
	doc := goodDoc()
	delete(doc, "access_token")
	srv, _, _ := recordingEndpoint(t, doc)
	ex, _ := New(Options{TokenURL: srv.URL, ClientID: "a", ClientSecret: "b"})
	if _, err := ex.Exchange(context.Background(), Subject{Token: "caller"}, orders); !errors.Is(err, ErrUnavailable) {
		t.Errorf("error %v, want ErrUnavailable", err)
	}
}

// TestExchange_RFC6749_5_2_NotAnErrorDocument: a 4xx without an RFC 6749
// §5.2 error document (an HTML page of a gateway) is an outage, not a
// refusal with an invented code.
func TestExchange_RFC6749_5_2_NotAnErrorDocument(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>forbidden</html>", http.StatusForbidden)
	}))
	defer srv.Close()
	ex, _ := New(Options{TokenURL: srv.URL, ClientID: "a", ClientSecret: "b"})
	_, err := ex.Exchange(context.Background(), Subject{Token: "caller"}, orders)
	var re *oauth2.RetrieveError
	if errors.As(err, &re) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("error %v", err)
	}
}

// TestExchange_OIDCDiscovery_4_3_IssuerMatch: a discovery document whose
// issuer is not the one asked for gives no token endpoint.
func TestExchange_OIDCDiscovery_4_3_IssuerMatch(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": "https://evil.example", "token_endpoint": srv.URL + "/token"})
	}))
	defer srv.Close()
	ex, _ := New(Options{Issuer: srv.URL, ClientID: "a", ClientSecret: "b"})
	if _, err := ex.Exchange(context.Background(), Subject{Token: "caller"}, orders); !errors.Is(err, ErrUnavailable) {
		t.Errorf("error %v", err)
	}
}

// TestExchangeTimeout: a token endpoint that does not answer within the
// client's timeout is an outage.
func TestExchangeTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	ex, _ := New(Options{TokenURL: srv.URL, ClientID: "a", ClientSecret: "b", HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}})
	if _, err := ex.Exchange(context.Background(), Subject{Token: "caller"}, orders); !errors.Is(err, ErrUnavailable) {
		t.Errorf("error %v", err)
	}
}
