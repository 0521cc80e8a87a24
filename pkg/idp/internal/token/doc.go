// Package token parses the access tokens, ID tokens and logout tokens
// pkg/idp verifies: the compact JWS split and base64url-decoded (JWS), its
// JOSE header and JSON claims read by a small scanner that matches names
// exactly and refuses duplicates (EachMember, DecodeClaims), and the
// interner that shares the claim strings recurring between tokens.
//
// It checks form only: signatures, times, issuer and audience are
// pkg/idp's. Every error wraps ErrInvalid (idp.ErrInvalidToken) as an
// *Error with a reason safe to show to the client. The fuzz targets and
// their seed corpora (testdata/fuzz) are beside the code they exercise.
package token
