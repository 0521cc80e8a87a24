package authflow

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/idp-proxy/idp-proxy/internal/jsondoc"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/idperr"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"
)

// tokenDocument is the JSON answer of callback and refresh.
type tokenDocument struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	IDToken      string `json:"id_token,omitempty"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	ReturnTo     string `json:"return_to,omitempty"`
}

func (a *authRoutes) refresh(w http.ResponseWriter, r *http.Request) {
	var body struct {
		RefreshToken *string `json:"refresh_token"`
	}
	if !a.checkPOST(w, r) || !decodeBody(w, r, &body, false) {
		return
	}
	if body.RefreshToken == nil || *body.RefreshToken == "" {
		writeProblem(w, http.StatusBadRequest, "refresh_token is required")
		return
	}
	if !validOpaqueToken(*body.RefreshToken) {
		writeProblem(w, http.StatusBadRequest, "refresh_token is malformed")
		return
	}
	conf, err := a.oauthConfig()
	if err != nil {
		a.writeUnavailable(w, err)
		return
	}
	ctx, cancel := a.providerCtx(r.Context())
	defer cancel()
	rctx, end := a.d.StartSpan(ctx, "idp.token.refresh", trace.SpanKindClient)
	tok, err := conf.TokenSource(rctx, &oauth2.Token{RefreshToken: *body.RefreshToken}).Token()
	end(err, "the provider refused the refresh token or could not be reached")
	if err != nil {
		a.providerFailure(w, "refresh", err, "the identity provider refused the refresh token")
		return
	}
	if _, ok := a.checkAccessToken(ctx, w, tok.AccessToken); !ok {
		return
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID != "" {
		// The nonce of the original login is not known here (OIDC Core
		// §12.2 lets it be absent or repeated); everything else is checked.
		if _, err := a.d.VerifyIDToken(ctx, rawID, "", tok.AccessToken); err != nil {
			a.d.Logger.Warn("idp: refresh: ID token rejected", "error", err)
			writeProblem(w, http.StatusBadGateway, "the identity provider returned an invalid ID token")
			return
		}
	}
	a.writeTokens(w, r, tok, rawID, "")
}

// checkAccessToken verifies a freshly issued access token as Middleware
// would, so that the routes never hand out a token this service refuses.
func (a *authRoutes) checkAccessToken(ctx context.Context, w http.ResponseWriter, raw string) (Access, bool) {
	id, err := a.d.VerifyAccess(ctx, raw)
	switch {
	case err == nil:
		return id, true
	case errors.Is(err, idperr.ErrUnavailable):
		a.writeUnavailable(w, nil)
	default:
		a.d.Logger.Warn("idp: the identity provider issued an access token this service refuses", "error", err)
		writeProblem(w, http.StatusBadGateway, "the identity provider issued an access token this service does not accept")
	}
	return Access{}, false
}

// writeTokens answers the token document, and sets the access-token cookie
// when tokens are read from a cookie.
func (a *authRoutes) writeTokens(w http.ResponseWriter, r *http.Request, tok *oauth2.Token, idToken, returnTo string) {
	expiresIn := tok.ExpiresIn
	if expiresIn <= 0 && !tok.Expiry.IsZero() {
		expiresIn = int64(time.Until(tok.Expiry) / time.Second)
	}
	if a.d.TokenCookie != "" {
		maxAge := int(max(expiresIn, 0)) // 0: a session cookie
		http.SetCookie(w, a.accessCookie(r, tok.AccessToken, maxAge))
	}
	jsondoc.Write(w, http.StatusOK, tokenDocument{
		AccessToken:  tok.AccessToken,
		RefreshToken: tok.RefreshToken,
		IDToken:      idToken,
		TokenType:    "Bearer",
		ExpiresIn:    expiresIn,
		ReturnTo:     returnTo,
	}, jsondoc.Options{Credentials: true})
}
