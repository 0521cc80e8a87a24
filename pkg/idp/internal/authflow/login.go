package authflow

import (
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/seal"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/oauth2"
)

// loginState is sealed into the StateCookie by GET login.
type loginState struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	ReturnTo string `json:"r,omitempty"`
	Exp      int64  `json:"e"`
}

func (a *authRoutes) login(w http.ResponseWriter, r *http.Request) {
	conf, err := a.oauthConfig()
	if err != nil {
		a.writeUnavailable(w, err)
		return
	}
	// On an app's host, a relative target is that host's page, and so is
	// the default ("/"): never the callback host's.
	origin := a.d.Site.appOrigin(r)
	var returnTo string
	if origin != "" {
		returnTo = origin + "/"
	}
	q := r.URL.Query()
	name := "return_to"
	if _, ok := q["rd"]; ok {
		name = "rd" // oauth2-proxy's name, as ingress-nginx's auth-signin sends it
	}
	if vals, ok := q[name]; ok {
		if len(vals) != 1 || len(q["return_to"])+len(q["rd"]) != 1 {
			writeProblem(w, http.StatusBadRequest, "return_to given more than once")
			return
		}
		if returnTo, ok = a.returnTarget(vals[0], origin); !ok {
			if a.d.Site.Redirects != nil {
				writeProblem(w, http.StatusBadRequest, "return_to must be a relative path on this site or a URL on an allowed host (allowed_redirect_hosts)")
			} else {
				writeProblem(w, http.StatusBadRequest, "return_to must be a relative path on this site")
			}
			return
		}
	}
	if origin != "" && a.d.Site.stateDomain(r) == "" {
		// The callback host could not read a login state set on this
		// host (no session cookie domain covers both): the sign-in
		// starts over there, to come back here.
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, a.d.Site.centralLoginURL(returnTo), http.StatusFound)
		return
	}
	exp := a.d.Now().Add(StateTTL)
	st := loginState{
		State:    rand.Text() + rand.Text(), // 2×128 bits
		Nonce:    rand.Text() + rand.Text(),
		Verifier: oauth2.GenerateVerifier(),
		ReturnTo: returnTo,
		Exp:      exp.Unix(),
	}
	sealed, err := a.seal.Seal(StateCookie, st, exp)
	if err != nil {
		a.d.Logger.Error("idp: login: sealing the state failed", "error", err)
		writeProblem(w, http.StatusInternalServerError, "internal error")
		return
	}
	http.SetCookie(w, a.stateCookie(r, sealed, int(StateTTL/time.Second)))
	w.Header().Set("Cache-Control", "no-store")
	u := conf.AuthCodeURL(st.State, oauth2.S256ChallengeOption(st.Verifier), oidc.Nonce(st.Nonce))
	http.Redirect(w, r, u, http.StatusFound)
}

func (a *authRoutes) callback(w http.ResponseWriter, r *http.Request) {
	// The login state is single-use: the cookie goes whatever the outcome.
	http.SetCookie(w, a.stateCookie(r, "", -1))
	w.Header().Set("Cache-Control", "no-store")

	cs := r.CookiesNamed(StateCookie)
	if len(cs) != 1 {
		writeProblem(w, http.StatusBadRequest, "no login in progress: the login state cookie is missing or ambiguous")
		return
	}
	now := a.d.Now()
	var st loginState
	switch err := a.seal.Open(StateCookie, cs[0].Value, now, &st); {
	case errors.Is(err, seal.ErrExpired):
		writeProblem(w, http.StatusBadRequest, "the login has expired; start again")
		return
	case err != nil:
		writeProblem(w, http.StatusBadRequest, "the login state cookie is invalid")
		return
	}
	q := r.URL.Query()
	if len(q["state"]) != 1 || subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(st.State)) != 1 {
		writeProblem(w, http.StatusBadRequest, "state mismatch")
		return
	}
	// RFC 9207: a provider that names itself in the answer must be ours
	// (mix-up attacks); Keycloak sends iss.
	if iss, ok := q["iss"]; ok && (len(iss) != 1 || iss[0] != a.d.Issuer) {
		writeProblem(w, http.StatusBadRequest, "the answer comes from another identity provider")
		return
	}
	first := a.used.use(st.State, time.Unix(st.Exp, 0), now)
	if first && a.d.Sessions != nil && a.d.Sessions.HasBackend() {
		// Once across replicas, not only on this one.
		var err error
		if first, err = a.d.Sessions.UseLoginState(r.Context(), st.State, time.Unix(st.Exp, 0)); err != nil {
			a.d.Logger.Warn("idp: callback: the session store is unavailable", "error", err)
			a.writeUnavailable(w, err)
			return
		}
	}
	if !first {
		writeProblem(w, http.StatusBadRequest, "this login has already been completed")
		return
	}
	if e := q.Get("error"); e != "" {
		code := SanitizeErrorCode(e)
		a.d.Logger.Info("idp: login refused by the identity provider", "error", code)
		status := http.StatusBadRequest
		switch code {
		case "access_denied", "login_required", "consent_required", "interaction_required", "account_selection_required":
			status = http.StatusUnauthorized
		}
		writeProblem(w, status, "the identity provider refused the login: "+code)
		return
	}
	code := q.Get("code")
	if code == "" || len(q["code"]) != 1 {
		writeProblem(w, http.StatusBadRequest, "the authorization code is missing")
		return
	}
	conf, err := a.oauthConfig()
	if err != nil {
		a.writeUnavailable(w, err)
		return
	}
	ctx, cancel := a.providerCtx(r.Context())
	defer cancel()
	xctx, end := a.d.StartSpan(ctx, "idp.token.exchange", trace.SpanKindClient)
	tok, err := conf.Exchange(xctx, code, oauth2.VerifierOption(st.Verifier))
	end(err, "the provider refused the code or could not be reached")
	if err != nil {
		a.providerFailure(w, "code exchange", err, "the identity provider refused the authorization code")
		return
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID == "" {
		a.d.Logger.Warn("idp: callback: the token response has no id_token")
		writeProblem(w, http.StatusBadGateway, "the identity provider returned no ID token")
		return
	}
	idc, err := a.d.VerifyIDToken(ctx, rawID, st.Nonce, tok.AccessToken)
	if err != nil {
		a.d.Logger.Warn("idp: callback: ID token rejected", "error", err)
		writeProblem(w, http.StatusUnauthorized, "the ID token is invalid")
		return
	}
	id, ok := a.checkAccessToken(ctx, w, tok.AccessToken)
	if !ok {
		return
	}
	a.d.Logger.Info("idp: login completed", "sub", id.Sub)
	if a.d.Sessions != nil {
		a.startSession(w, r, tok, rawID, idc.SID, id, st.ReturnTo)
		return
	}
	a.writeTokens(w, r, tok, rawID, st.ReturnTo)
}

// returnTarget judges a return-to target: a relative path on this site
// (an absolute URL on the site's own origin counts as its path), or with
// idp.Config.AllowedRedirectHosts an absolute URL on an allowed host. A
// relative path given on an app's host (origin, see appOrigin) is a page
// of that host: the absolute URL origin+path. It returns the target to
// redirect to.
func (a *authRoutes) returnTarget(s, origin string) (string, bool) {
	if strings.HasPrefix(s, "/") && origin != "" {
		if _, ok := safeReturnTo(s); !ok {
			return "", false
		}
		return a.d.Site.Redirects.target(origin+s, a.httpsRedirect)
	}
	s = a.sameOrigin(s)
	if strings.HasPrefix(s, "/") {
		return safeReturnTo(s)
	}
	return a.d.Site.Redirects.target(s, a.httpsRedirect)
}

// sameOrigin turns an absolute return-to URL on the site's own origin
// (RedirectURI's scheme and host, as an ingress's sign-in redirect sends
// it: "https://app.example/page?x=1") into its path and query; anything
// else is returned as is, for safeReturnTo to judge.
func (a *authRoutes) sameOrigin(s string) string {
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		return s
	}
	u, err := url.Parse(s)
	redirect := a.d.Site.RedirectURI
	if err != nil || u.User != nil || u.Fragment != "" ||
		!strings.EqualFold(u.Scheme, redirect.Scheme) || !strings.EqualFold(u.Host, redirect.Host) {
		return s
	}
	rest := s[strings.Index(s, "://")+3:]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:] // the path and query exactly as sent
	}
	return "/"
}

// usedSet remembers single-use values (login states) until their expiry,
// so that a callback replayed with a copy of the state cookie is refused
// even though the cookie itself is still authentic. It is per process and
// bounded: when full of unexpired entries, half of them are forgotten
// (the provider's single-use authorization code remains the backstop).
type usedSet struct {
	max int

	mu   sync.Mutex
	seen map[string]time.Time // value -> expiry
}

func newUsedSet(max int) *usedSet {
	return &usedSet{max: max, seen: make(map[string]time.Time)}
}

// use marks v as used until exp and reports whether it was unused.
func (u *usedSet) use(v string, exp, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if e, ok := u.seen[v]; ok && now.Before(e) {
		return false
	}
	if len(u.seen) >= u.max {
		for k, e := range u.seen {
			if !now.Before(e) {
				delete(u.seen, k)
			}
		}
		if len(u.seen) >= u.max {
			for k := range u.seen {
				if len(u.seen) < u.max/2 {
					break
				}
				delete(u.seen, k) // map order is random: forget arbitrary entries
			}
		}
	}
	u.seen[v] = exp
	return true
}
