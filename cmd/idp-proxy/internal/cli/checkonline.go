package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// offlineUnknowns is what check-config cannot know without contacting the
// provider: said after every offline check, so that "configuration OK"
// never claims more than was checked.
const offlineUnknowns = "not checked offline: provider reachability, issuer match, client credentials; run check-config --online\n"

// checkOnline contacts the identity providers of ic (idp.CheckProvider),
// prints one line per finding and fails when any check failed. noSecrets
// leaves out the client's authentication (its secret is not at hand).
func checkOnline(ctx context.Context, out io.Writer, ic idp.Config, noSecrets bool) error {
	checks, err := idp.CheckProvider(ctx, ic, idp.ProviderCheckOptions{NoClient: noSecrets})
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out, "online checks:"); err != nil {
		return err
	}
	failed := 0
	for _, c := range checks {
		if c.Result == idp.CheckFailed {
			failed++
		}
		if _, err := fmt.Fprintf(out, "  %-4s  %s %s: %s\n", c.Result, c.What, c.IssuerName, c.Message); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("idp-proxy: %d online check(s) failed (see above)", failed)
	}
	return nil
}
