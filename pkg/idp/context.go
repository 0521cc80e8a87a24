package idp

import (
	"context"
	"net/http"
)

// identity is what a verified request carries in its context. It is never
// modified after creation.
type identity struct {
	raw     string
	payload *TokenPayload
	user    *User
}

type ctxKey struct{}

func withIdentity(ctx context.Context, id *identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

func identityFrom(ctx context.Context) *identity {
	id, _ := ctx.Value(ctxKey{}).(*identity)
	return id
}

// UserFrom returns the identity of an authenticated request (the
// specification's current_user). The User is shared: do not modify it.
func UserFrom(ctx context.Context) (*User, bool) {
	if id := identityFrom(ctx); id != nil {
		return id.user, true
	}
	return nil, false
}

// PayloadFrom returns the verified claims of an authenticated request (the
// specification's token_payload). The payload is shared: do not modify it.
func PayloadFrom(ctx context.Context) (*TokenPayload, bool) {
	if id := identityFrom(ctx); id != nil {
		return id.payload, true
	}
	return nil, false
}

// RawTokenFrom returns the raw access token of an authenticated request
// (the specification's raw_token), for forwarding to a downstream API.
func RawTokenFrom(ctx context.Context) (string, bool) {
	if id := identityFrom(ctx); id != nil {
		return id.raw, true
	}
	return "", false
}

// WithUser adapts a handler that declares the user: the returned handler
// authenticates the request (unless an enclosing Middleware already did)
// and answers 401/503 itself when that fails, so declaring the identity is
// what protects the handler.
func (p *Plugin) WithUser(h func(w http.ResponseWriter, r *http.Request, u *User)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r, id := p.ensure(w, r); id != nil {
			h(w, r, id.user)
		}
	})
}

// WithPayload is WithUser for handlers that declare the token payload.
func (p *Plugin) WithPayload(h func(w http.ResponseWriter, r *http.Request, tp *TokenPayload)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r, id := p.ensure(w, r); id != nil {
			h(w, r, id.payload)
		}
	})
}

// WithRawToken is WithUser for handlers that declare the raw token.
func (p *Plugin) WithRawToken(h func(w http.ResponseWriter, r *http.Request, raw string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r, id := p.ensure(w, r); id != nil {
			h(w, r, id.raw)
		}
	})
}

// ensure returns the request's identity, authenticating the request when
// no enclosing middleware did. On failure it writes the error answer and
// returns a nil identity.
func (p *Plugin) ensure(w http.ResponseWriter, r *http.Request) (*http.Request, *identity) {
	if id := identityFrom(r.Context()); id != nil {
		return r, id
	}
	r2, err := p.Authenticate(r)
	if err != nil {
		p.WriteError(w, r, err)
		return r, nil
	}
	return r2, identityFrom(r2.Context())
}
