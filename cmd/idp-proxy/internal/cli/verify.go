package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idp-proxy/idp-proxy/cmd/idp-proxy/internal/config"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
	"github.com/idp-proxy/idp-proxy/pkg/proxy"
)

// errInvalidToken makes verify exit with status 1 after printing its
// decision.
var errInvalidToken = errors.New("idp-proxy: the token is not valid")

// verdict is what verify prints.
type verdict struct {
	Decision string          `json:"decision"` // valid | invalid | unavailable
	Error    string          `json:"error,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Issuer   string          `json:"issuer"`
	User     *userJSON       `json:"user,omitempty"`
	Claims   json.RawMessage `json:"claims,omitempty"`
	// Request is the proxy's judgement of --request.
	Request *proxy.Decision `json:"request,omitempty"`
}

type userJSON struct {
	// IssuerName names the trusted issuer of the token (idp.issuer_name
	// or an idp.issuers entry's name).
	IssuerName        string              `json:"issuer_name"`
	Sub               string              `json:"sub"`
	PreferredUsername string              `json:"preferred_username,omitempty"`
	Email             string              `json:"email,omitempty"`
	RealmRoles        []string            `json:"realm_roles"`
	ClientRoles       map[string][]string `json:"client_roles,omitempty"`
	Groups            []string            `json:"groups,omitempty"`
	Scopes            []string            `json:"scopes,omitempty"`
	// ExpiresAt is left out past the year 9999, which RFC 3339 (and
	// time.Time's MarshalJSON) cannot write; claims.exp holds the number.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

func newVerifyCmd(d deps, g *globalFlags, load loadFunc) *cobra.Command {
	var request string
	var noSecrets bool
	cmd := &cobra.Command{
		Use:   "verify [TOKEN|-]",
		Short: "Verify an access token against the provider and print the decision and claims",
		Long: `verify checks TOKEN (or the first line of stdin when TOKEN is "-" or
absent; a leading "Bearer " is ignored) exactly as the proxy does: signature
with the provider's keys, algorithm, issuer, expiry, token type and the
audience rule with idp.audience and idp.optional_audiences. It prints a JSON
document {decision, error, reason, issuer, user, claims} on stdout and exits
with status 0 when the token is valid, 1 otherwise. The token itself is never
printed. verify uses no secret: it neither reads nor requires
idp.client_secret, idp.session_secret or their files (--no-secrets, as
check-config takes it, is accepted and changes nothing).

With --request "METHOD /path" (or "METHOD https://host/path", to judge host
rules too), verify also judges that request with the
configured rules (which needs the whole configuration) and adds
{rule, decision, status, user, clause} under "request"; status is the proxy's
answer, 0 when it would forward; clause names the rule's clause that refused
a forbidden request ("roles", "groups", "claims:tid", "email_domains"), as
the 403 body does. It then exits 1 when the request would be refused.

  idp-proxy verify -c config.yaml --request "POST /shorten" "$TOKEN"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := load(cmd, g.config)
			if err != nil {
				return err
			}
			// Judging a request needs the whole configuration; its errors
			// come after those of the provider settings and the token.
			// Secrets are never used here: stand-ins take their places.
			var compiled *config.Compiled
			var compileErr error
			if request != "" {
				compiled, compileErr = config.Compile(cfg, config.CompileOptions{NoSecrets: true})
			}
			ic, err := idpConfig(cfg, compiled, false)
			if err != nil {
				return err
			}
			raw, err := readToken(args, d.stdin)
			if err != nil {
				return err
			}
			if compileErr != nil {
				return compileErr
			}
			ic.Logger = slog.New(slog.DiscardHandler)
			ctx, cancel := context.WithTimeout(cmd.Context(), ic.HTTPTimeout)
			defer cancel()
			p, err := idp.New(ctx, ic)
			if err != nil {
				return err
			}
			defer p.Close()
			var px *proxy.Proxy
			if request != "" {
				if px, err = proxy.NewCompiled(p, compiled.Proxy, proxy.Options{}); err != nil {
					return err
				}
			}
			v := verdict{Issuer: p.Issuer()}
			var id *idp.Identity
			// Refresh joins the plugin's first key fetch and says why it
			// failed (provider unreachable, discovery naming another
			// issuer, no jwks_uri), which waiting for readiness would not.
			if rerr := p.Refresh(ctx); rerr != nil && !p.Ready() {
				err = fmt.Errorf("%w: %w", idp.ErrUnavailable, rerr)
			} else {
				id, err = p.VerifyIdentity(ctx, raw)
			}
			switch {
			case err == nil:
				v.Decision, v.Claims = "valid", id.Payload.Raw
				u := userOf(id)
				v.User = &u
			case errors.Is(err, idp.ErrUnavailable):
				v.Decision, v.Error = "unavailable", "the provider's keys could not be loaded: "+err.Error()
			default:
				v.Decision, v.Error, v.Reason = "invalid", err.Error(), idp.Reason(err)
			}
			if err != nil {
				err = fmt.Errorf("%w: %s", errInvalidToken, v.Decision)
			}
			if px != nil {
				method, target, _ := strings.Cut(strings.TrimSpace(request), " ")
				dec, derr := px.Decide(ctx, method, strings.TrimSpace(target), raw)
				if derr != nil {
					return derr
				}
				v.Request = &dec
				if dec.Status != 0 && err == nil {
					if dec.Clause != "" {
						err = fmt.Errorf("idp-proxy: %s would be refused with %d (%s, rule %s, clause %s)", request, dec.Status, dec.Decision, dec.Rule, dec.Clause)
					} else {
						err = fmt.Errorf("idp-proxy: %s would be refused with %d (%s, rule %s)", request, dec.Status, dec.Decision, dec.Rule)
					}
				}
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			if werr := enc.Encode(v); werr != nil {
				return werr
			}
			return err
		},
	}
	cmd.Flags().StringVar(&request, "request", "", `also judge this request with the rules, e.g. "POST /shorten"`)
	cmd.Flags().BoolVar(&noSecrets, "no-secrets", false, "accepted as check-config takes it; verify never reads nor requires secrets")
	return cmd
}

func readToken(args []string, stdin io.Reader) (string, error) {
	var raw string
	if len(args) == 1 && args[0] != "-" {
		raw = args[0]
	} else {
		if stdin == nil {
			return "", errors.New("idp-proxy: no token given and no stdin")
		}
		line, err := bufio.NewReaderSize(stdin, 64<<10).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("idp-proxy: reading the token from stdin: %w", err)
		}
		raw = line
	}
	raw = strings.TrimSpace(raw)
	if len(raw) > 7 && strings.EqualFold(raw[:7], "bearer ") {
		raw = strings.TrimSpace(raw[7:])
	}
	if raw == "" {
		return "", errors.New("idp-proxy: empty token")
	}
	return raw, nil
}

// userOf builds the identity the proxy would forward, as the claim
// mapping reads it.
func userOf(id *idp.Identity) userJSON {
	u := userJSON{
		IssuerName:        id.User.IssuerName,
		Sub:               id.User.Sub,
		PreferredUsername: id.User.PreferredUsername,
		Email:             id.User.Email,
		RealmRoles:        id.User.RealmRoles,
		ClientRoles:       id.User.ClientRoles,
		Groups:            id.User.Groups,
	}
	if exp := id.Payload.ExpiresAt.UTC(); exp.Year() <= 9999 {
		u.ExpiresAt = &exp
	}
	if u.RealmRoles == nil {
		u.RealmRoles = []string{}
	}
	if len(id.User.Scopes) > 0 {
		u.Scopes = id.User.Scopes
	}
	return u
}
