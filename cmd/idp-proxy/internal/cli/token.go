package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/idp-proxy/idp-proxy/cmd/idp-proxy/internal/config"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// idpConfig returns the provider settings of cfg, checking only what the
// token and verify commands need (the upstream may be unset): those of
// compiled when the command compiled the whole file. Only the secrets the
// command uses are read (clientSecret: token's client secret; verify uses
// none): stand-ins take the places of the others.
func idpConfig(cfg config.File, compiled *config.Compiled, clientSecret bool) (idp.Config, error) {
	var ic idp.Config
	if compiled != nil {
		ic = compiled.IDP
	} else {
		var err error
		pluginConfig := cfg.PluginConfigWithoutSecrets
		if clientSecret {
			pluginConfig = cfg.PluginConfigClientOnly
		}
		if ic, err = pluginConfig(); err != nil {
			return idp.Config{}, err
		}
	}
	required := []struct{ key, v string }{{"idp.client_id", ic.ClientID}}
	if ic.IssuerURL == "" {
		required = append(required, struct{ key, v string }{"idp.server_url", ic.ServerURL}, struct{ key, v string }{"idp.realm", ic.Realm})
	}
	var errs []error
	if ic.IssuerURL == "" && ic.ServerURL == "" && ic.Realm == "" {
		errs = append(errs, fmt.Errorf("idp-proxy: idp.issuer_url, or idp.server_url and idp.realm (a Keycloak realm), is required (config file or %s)", config.EnvName("idp.issuer_url")))
		required = required[:1]
	}
	for _, f := range required {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("idp-proxy: %s is required (config file or %s)", f.key, config.EnvName(f.key)))
		}
	}
	if ic.HTTPTimeout <= 0 {
		ic.HTTPTimeout = idp.DefaultHTTPTimeout
	}
	return ic, errors.Join(errs...)
}

func newTokenCmd(g *globalFlags, load loadFunc) *cobra.Command {
	var scopes []string
	var dpopKey string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print a client_credentials access token from the configured provider",
		Long: `token obtains an access token with the client_credentials grant for
idp.client_id and idp.client_secret (or idp.client_secret_file, or
IDP_PROXY_IDP_CLIENT_SECRET) from the provider's token endpoint (found by
discovery; for a Keycloak realm, {server_url}/realms/{realm}/protocol/openid-connect/token
when discovery fails) and prints it alone on stdout, for scripts:

  curl -H "Authorization: Bearer $(idp-proxy token -c config.yaml)" http://127.0.0.1:4180/shorten`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load(cmd, g.config)
			if err != nil {
				return err
			}
			ic, err := idpConfig(cfg, nil, true)
			if err != nil {
				return err
			}
			if ic.ClientSecret == "" {
				return errors.New("idp-proxy: token needs idp.client_secret, idp.client_secret_file or IDP_PROXY_IDP_CLIENT_SECRET")
			}
			ic.Logger = slog.New(slog.DiscardHandler)
			if dpopKey != "" {
				key, err := readDPoPKey(dpopKey)
				if err != nil {
					return err
				}
				ic.HTTPClient = &http.Client{Timeout: ic.HTTPTimeout, Transport: dpopTransport{key: key, next: http.DefaultTransport}}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), ic.HTTPTimeout)
			defer cancel()
			p, err := idp.New(ctx, ic)
			if err != nil {
				return err
			}
			defer p.Close()
			// Discovery gives the token endpoint; the plugin falls back to
			// Keycloak's path for a realm whose discovery failed.
			discoveryErr := p.Refresh(ctx)
			tok, err := p.ClientCredentials(ctx, scopes...).Token()
			if err != nil {
				if errors.Is(err, idp.ErrUnavailable) && discoveryErr != nil {
					err = fmt.Errorf("%w (%w)", err, discoveryErr)
				}
				return fmt.Errorf("idp-proxy: token request to %s failed: %w", ic.Issuer(), err)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), tok.AccessToken)
			return err
		},
	}
	cmd.Flags().StringSliceVar(&scopes, "scope", nil, "scopes to request (repeat or comma-separate)")
	cmd.Flags().StringVar(&dpopKey, "dpop-key", "", "ask for a DPoP-bound token (RFC 9449 §5): the token request carries a proof by this PEM key (see dpop-proof --new-key)")
	return cmd
}
