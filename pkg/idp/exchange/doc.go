// Package exchange gets the tokens a service needs to call another
// service on a caller's behalf, or on its own:
//
//   - [Exchanger] trades a caller's access token at the identity provider
//     for one with another audience and scope (RFC 8693 token exchange,
//     Keycloak's "standard token exchange" since 26.2), as a confidential
//     client. Exchanged tokens are cached per (subject token, audience,
//     scopes) until shortly before the earlier of the two expiries, with
//     one exchange in flight per key; [Exchanger.DropSession] and
//     [Exchanger.DropSubject] forget a session's tokens at logout.
//   - [ClientCredentials] is the service's own token (RFC 6749 §4.4),
//     cached and fetched again shortly before it expires, one request in
//     flight.
//
// Both are [golang.org/x/oauth2.TokenSource]s ([Exchanger.TokenSource],
// [Exchanger.FromRequest]), so that an oauth2.Transport or
// oauth2.NewClient puts their tokens on outgoing requests.
//
// A refusal by the provider (an RFC 6749 §5.2 error document with a 4xx
// status) is an *[golang.org/x/oauth2.RetrieveError]; an outage (no
// answer, a timeout, a 5xx or 429, an unusable answer) is an
// *[UnavailableError], which matches [ErrUnavailable].
package exchange
