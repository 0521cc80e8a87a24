package exchange

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

func (s *setup) clientCredentials(t *testing.T, id, secret string) *ClientCredentials {
	t.Helper()
	cc, err := NewClientCredentials(ClientCredentialsOptions{TokenURL: s.srv.TokenURL(), ClientID: id, ClientSecret: secret,
		Scopes: []string{"orders"}, Audience: "orders-api", Now: s.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// TestClientCredentialsRenewedBeforeExpiry: the token is kept until the
// margin before its expiry, then fetched again.
func TestClientCredentialsRenewedBeforeExpiry(t *testing.T) {
	s := newSetup(t)
	cc := s.clientCredentials(t, "robot", "robot-secret")
	first, err := cc.Token()
	if err != nil || first.AccessToken == "" {
		t.Fatal(err)
	}
	s.clk.Add(5*time.Minute - DefaultMargin - time.Second)
	if tok, _ := cc.Token(); tok != first || cc.Fetches() != 1 {
		t.Fatal("fetched again before the margin")
	}
	s.clk.Add(2 * time.Second)
	if tok, err := cc.Token(); err != nil || tok == first || cc.Fetches() != 2 {
		t.Fatalf("not fetched again within the margin: %v, %d fetches", err, cc.Fetches())
	}
	cc.Forget()
	cc.Token()
	if cc.Fetches() != 3 {
		t.Error("Forget kept the token")
	}
}

// TestClientCredentialsOneInFlight: concurrent callers share one fetch.
func TestClientCredentialsOneInFlight(t *testing.T) {
	s := newSetup(t)
	cc := s.clientCredentials(t, "robot", "robot-secret")
	const n = 100
	s.srv.SetTokenOutage(0, 0)
	var waiting sync.WaitGroup
	waiting.Add(n)
	gate := make(chan struct{})
	cc.waiting = func() { waiting.Done(); <-gate }
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := cc.Token(); err != nil {
				t.Error(err)
			}
		}()
	}
	waiting.Wait()
	before := s.srv.TokenRequests()
	close(gate)
	wg.Wait()
	if got := s.srv.TokenRequests() - before; got != 1 || cc.Fetches() != 1 {
		t.Errorf("%d token requests for %d concurrent callers, want 1", got, n)
	}
}

// TestClientCredentialsErrors: a client without a service account is
// refused (unauthorized_client, as Keycloak); an outage is ErrUnavailable.
func TestClientCredentialsErrors(t *testing.T) {
	s := newSetup(t)
	_, err := s.clientCredentials(t, "orders-api", "orders-secret").Token()
	if re := refusalOf(t, err); re.ErrorCode != "unauthorized_client" {
		t.Errorf("code %q", re.ErrorCode)
	}
	s.srv.SetTokenOutage(http.StatusBadGateway, 3)
	_, err = s.clientCredentials(t, "robot", "robot-secret").TokenContext(context.Background())
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.RetryAfter != 3*time.Second {
		t.Errorf("outage: %v", err)
	}
	var _ oauth2.TokenSource = (*ClientCredentials)(nil)
	if _, err := NewClientCredentials(ClientCredentialsOptions{TokenURL: "https://x/t", ClientID: "a"}); !errors.Is(err, ErrOptions) {
		t.Errorf("no secret: %v", err)
	}
}
