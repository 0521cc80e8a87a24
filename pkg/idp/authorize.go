package idp

import (
	"errors"
	"net/http"

	"github.com/idp-proxy/idp-proxy/pkg/idp/dpop"
)

// Authorize authenticates r and applies guards, without writing anything:
// the one decision that Middleware, Require, the With* adapters and
// pkg/proxy share. A request whose context already carries an Identity
// (an enclosing Middleware verified it) is not verified again. Every
// guard must allow the user (an IdentityGuard judges the whole identity);
// with no guards any valid token is allowed. A refusal names the clause of
// the first guard that refused (Verdict.Clause).
//
// Answer a refusal with WriteVerdict; on Allowed, serve the request with
// NewContext(r.Context(), v.Identity) when the handler reads the identity
// from the context.
//
// Authorize records no span: with Config.TracerProvider set, Middleware,
// Require, Authenticate and the With* adapters record one (idp.authorize)
// around it, and pkg/proxy records its own.
//
// A sender-constrained token is checked against the request (see
// binding.go's rules, and Config.DPoP): a DPoP proof (the DPoP header,
// for the request's method and URL), or the client certificate.
func (p *Plugin) Authorize(r *http.Request, guards ...Guard) Verdict {
	return p.authorizeMode(r, p.cfg.DPoP.Mode, guards)
}

func (p *Plugin) authorizeMode(r *http.Request, mode dpop.Mode, guards []Guard) Verdict {
	v := Verdict{dpopMode: mode}
	id := identityFrom(r.Context())
	if id == nil {
		var err error
		if id, err = p.identify(r, &v); err != nil {
			return v.with(VerdictOf(err))
		}
		if !boundOK(id, v.dpopScheme, mode) {
			if err := p.checkRequestPossession(r, id, v.dpopScheme, mode); err != nil {
				return v.with(VerdictOf(err))
			}
		}
	}
	for _, g := range guards {
		if ig, ok := g.(IdentityGuard); ok {
			if clause, ok := ig.Judge(id); !ok {
				return v.with(Verdict{Outcome: Forbidden, Identity: id, Err: ErrForbidden, Clause: clause})
			}
			continue
		}
		if !g.Allow(id.User) {
			var clause string
			if ng, ok := g.(NamedGuard); ok {
				clause = ng.Clause()
			}
			return v.with(Verdict{Outcome: Forbidden, Identity: id, Err: ErrForbidden, Clause: clause})
		}
	}
	return v.with(Verdict{Outcome: Allowed, Identity: id})
}

// identify finds r's token (with sessions, the session's when r carries
// none) and verifies it; v receives the session fields (Session, and the
// cookies that renew or clear the session).
func (p *Plugin) identify(r *http.Request, v *Verdict) (*Identity, error) {
	var pr probe
	raw, dpopScheme, err := p.credential(r)
	v.dpopScheme = dpopScheme
	if err == nil {
		// A token in the hot table was verified before, its syntax
		// included (a hit compares the whole token): only a miss checks
		// the syntax, and goes on with the same probe.
		if id := p.probe(raw, &pr); id != nil {
			v.Cached = true
			return id, nil
		}
		// The JWS parser refuses every token RFC 6750's syntax refuses,
		// as "malformed token" too (its alphabet is narrower), so the
		// syntax is checked here only where it must come first: before
		// the probe's own refusal (too large, keys unavailable) and
		// before waiting for the first key set. (A kilobyte's check
		// cost a miss about 4,600 instructions, bench/README.md.)
		if pr.err != nil || p.byURL == nil && p.keys.current() == nil {
			_, err = checkTokenSyntax(raw)
		}
	}
	if errors.Is(err, ErrNoToken) && err != ErrCrossOrigin && p.sessions != nil {
		raw, v.Cookies, err = p.sessions.Token(r)
		v.Session = err == nil
		if err == nil {
			pr = probe{}
			if id := p.probe(raw, &pr); id != nil {
				v.Cached = true
				return id, nil
			}
		}
	}
	if err != nil {
		return nil, err
	}
	id, err := p.verifyMiss(r.Context(), &pr)
	v.Cached = pr.cached
	if err != nil && v.Session && errors.Is(err, ErrInvalidToken) {
		// A session whose token no longer verifies (the provider's keys
		// changed past it): over, sign in again.
		p.cfg.Logger.Info("idp: session ended: its access token no longer verifies", "reason", Reason(err))
		v.Cookies = p.sessions.ClearCookies(r)
		return nil, ErrNoToken
	}
	return id, err
}
