// Command idp-demo runs the whole stack on loopback: a development identity
// provider, the shortener and idp-proxy in front of it. `make demo` runs it.
package main

import (
	"os"

	"github.com/idp-proxy/idp-proxy/internal/demo"
)

func main() { os.Exit(demo.Main(os.Args[1:], os.Stdout, os.Stderr)) }
