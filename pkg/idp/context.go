package idp

import (
	"context"
	"net/http"
)

// Identity is what a verified token proves: the user, the verified claims
// and the raw token, travelling as one value. An Identity is shared (the
// verified-token cache hands the same one to every request with that
// token): never modify it or what it points to.
type Identity struct {
	// User is the specification's current_user.
	User *User
	// Payload is the specification's token_payload: the verified claims.
	Payload *TokenPayload
	// Raw is the access token as it was sent, for forwarding downstream.
	Raw string
	// cnf is the token's binding (binding.go), checked on every request.
	cnf confirmation
}

type ctxKey struct{}

// NewContext returns a copy of ctx that carries id, as Middleware passes
// it to the handlers it wraps.
func NewContext(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// IdentityFrom returns the Identity of an authenticated request: user,
// verified claims and raw token in one look-up.
func IdentityFrom(ctx context.Context) (*Identity, bool) {
	id := identityFrom(ctx)
	return id, id != nil
}

func identityFrom(ctx context.Context) *Identity {
	id, _ := ctx.Value(ctxKey{}).(*Identity)
	return id
}

// withVerdict returns r carrying the allowed verdict's identity, r itself
// when its context already does.
func withVerdict(r *http.Request, v Verdict) *http.Request {
	if identityFrom(r.Context()) == v.Identity {
		return r
	}
	return r.WithContext(NewContext(r.Context(), v.Identity))
}

// UserFrom returns the user of an authenticated request (the
// specification's current_user). The User is shared: do not modify it.
func UserFrom(ctx context.Context) (*User, bool) {
	if id := identityFrom(ctx); id != nil {
		return id.User, true
	}
	return nil, false
}

// PayloadFrom returns the verified claims of an authenticated request (the
// specification's token_payload). The payload is shared: do not modify it.
func PayloadFrom(ctx context.Context) (*TokenPayload, bool) {
	if id := identityFrom(ctx); id != nil {
		return id.Payload, true
	}
	return nil, false
}

// RawTokenFrom returns the raw access token of an authenticated request
// (the specification's raw_token), for forwarding to a downstream API.
func RawTokenFrom(ctx context.Context) (string, bool) {
	if id := identityFrom(ctx); id != nil {
		return id.Raw, true
	}
	return "", false
}
