// Command idp-proxy is an authenticating reverse proxy for OpenID Connect
// bearer tokens: it validates tokens of a Keycloak-style realm, applies
// per-route rules and forwards requests with identity headers. See
// `idp-proxy --help`, config.example.yaml and the README.
package main

import (
	"os"

	"github.com/idp-proxy/idp-proxy/cmd/idp-proxy/internal/cli"
)

func main() {
	os.Exit(cli.Main())
}
