// Command shortener runs the URL shortener service. See
// `shortener --help` and the README for flags, environment and stores.
package main

import (
	"os"

	"github.com/idp-proxy/idp-proxy/cmd/shortener/internal/cli"
)

func main() {
	os.Exit(cli.Main())
}
