package dpop

import "errors"

// NormalizeHTU returns the form of an absolute http or https URI under
// which RFC 9449 §4.3 compares htu with the request's URI: RFC 3986
// §6.2.2 syntax-based normalisation (scheme and host in lower case,
// percent-encodings in upper case, unreserved characters decoded, dot
// segments removed) and §6.2.3 scheme-based normalisation (the default
// port removed, an empty path made "/"), with the query and the fragment
// dropped (RFC 9449 §4.2). A URI that is not absolute http(s), or that
// holds characters a URI may not, is an error.
func NormalizeHTU(uri string) (string, error) {
	return "", errors.New("dpop: not implemented")
}
