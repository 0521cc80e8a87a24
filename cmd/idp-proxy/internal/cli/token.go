package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/idp-proxy/idp-proxy/cmd/idp-proxy/internal/config"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// idpConfig returns the provider settings of cfg, checking only what the
// token and verify commands need (the upstream may be unset): those of
// compiled when the command compiled the whole file, whose secret files
// are read already.
func idpConfig(cfg config.File, compiled *config.Compiled) (idp.Config, error) {
	var ic idp.Config
	if compiled != nil {
		ic = compiled.IDP
	} else {
		var err error
		if ic, err = cfg.PluginConfig(); err != nil {
			return idp.Config{}, err
		}
	}
	var errs []error
	for _, f := range []struct{ key, v string }{
		{"idp.server_url", ic.ServerURL}, {"idp.realm", ic.Realm}, {"idp.client_id", ic.ClientID},
	} {
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
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print a client_credentials access token from the configured provider",
		Long: `token obtains an access token with the client_credentials grant for
idp.client_id and idp.client_secret (or idp.client_secret_file, or
IDP_PROXY_IDP_CLIENT_SECRET) from {server_url}/realms/{realm}/protocol/openid-connect/token
and prints it alone on stdout, for scripts:

  curl -H "Authorization: Bearer $(idp-proxy token -c config.yaml)" http://127.0.0.1:4180/shorten`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load(cmd, g.config)
			if err != nil {
				return err
			}
			ic, err := idpConfig(cfg, nil)
			if err != nil {
				return err
			}
			if ic.ClientSecret == "" {
				return errors.New("idp-proxy: token needs idp.client_secret, idp.client_secret_file or IDP_PROXY_IDP_CLIENT_SECRET")
			}
			cc := clientcredentials.Config{
				ClientID:     ic.ClientID,
				ClientSecret: ic.ClientSecret,
				TokenURL:     ic.Issuer() + "/protocol/openid-connect/token",
				Scopes:       scopes,
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), ic.HTTPTimeout)
			defer cancel()
			ctx = context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Timeout: ic.HTTPTimeout})
			tok, err := cc.Token(ctx)
			if err != nil {
				return fmt.Errorf("idp-proxy: token request to %s failed: %w", cc.TokenURL, err)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), tok.AccessToken)
			return err
		},
	}
	cmd.Flags().StringSliceVar(&scopes, "scope", nil, "scopes to request (repeat or comma-separate)")
	return cmd
}
