// Command idp-demo runs the whole stack on loopback: a development identity
// provider, the shortener and idp-proxy in front of it. `make demo` runs it.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
