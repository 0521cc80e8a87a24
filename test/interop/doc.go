// Package interop holds the end-to-end tests of idp-proxy, pkg/idp and the
// shortener against a real, OpenID-certified third-party provider
// (oidc-provider, configured like one Keycloak realm: see provider/README.md)
// and a real browser (Debian's headless Chromium driven by playwright-core,
// see browser/).
//
// The tests build and start the real cmd/shortener and cmd/idp-proxy
// binaries on loopback. They need Node.js, the provider's and the browser
// driver's npm packages and /usr/bin/chromium; `.ci/setup` installs all of
// them. Without them the tests skip with a message, except when the CI
// environment variable is set: then they fail. -short skips them.
//
//	.ci/setup && go test -race -count=1 ./test/interop/
package interop
