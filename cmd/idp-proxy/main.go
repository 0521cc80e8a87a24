// Command idp-proxy is an authenticating reverse proxy for OpenID Connect
// bearer tokens: it validates tokens of any OpenID Connect provider (one
// issuer or several), applies per-route rules and forwards requests with
// identity headers to one upstream or many. See
// `idp-proxy --help`, config.example.yaml and the README.
package main

import (
	"os"

	"github.com/idp-proxy/idp-proxy/cmd/idp-proxy/internal/cli"
)

func main() {
	os.Exit(cli.Main())
}
