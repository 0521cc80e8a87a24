package proxy

import (
	"net/http"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// verdictCredential puts the credential of the upstream the ingress
// serves (picked by the original request's host and path, or the single
// upstream) into a forward-auth verdict, for the ingress to copy onto the
// request it forwards: the assertion in its header (assertion, and
// client_credentials with assertion keys), the exchanged or the proxy's
// own token as Authorization (exchange, client_credentials), Authorization
// empty otherwise, so that copying it replaces the caller's. The headers
// are present, empty, when there is nothing to send. It answers the
// provider's refusal or outage itself and returns false.
func (p *Proxy) verdictCredential(w http.ResponseWriter, orig *http.Request, c *credential, id *idp.Identity) bool {
	h := w.Header()
	if c.header != "" {
		h[c.header] = []string{""}
	}
	if id != nil {
		c.apply(p, h, id) // the assertion
	}
	if c.tokens == nil {
		return true
	}
	ctx, _, ok := p.withUpstreamToken(orig.Context(), w, orig, c, id)
	if !ok {
		return false
	}
	setUpstreamToken(h, ctx)
	return true
}
