package config

// ForwardAuth is the forward_auth section: verdicts for an ingress (nginx
// auth_request, Traefik forwardAuth, Caddy forward_auth); see README,
// "Behind an existing ingress".
type ForwardAuth struct {
	// Enabled serves GET {idp.auth_prefix}/verify and GET /oauth2/auth.
	// With it, upstream.url may be empty (forward-auth only). [false]
	Enabled bool `mapstructure:"enabled"`
	// Listen is a listener of its own for the verdicts, which only the
	// ingress should reach (every caller of it is trusted). [""]
	Listen string `mapstructure:"listen"`
	// TrustedCIDRs are the ingress's source addresses allowed to ask for
	// verdicts on the main listener. [none]
	TrustedCIDRs []string `mapstructure:"trusted_cidrs"`
}

func (fa ForwardAuth) validate(bad func([]string, string, ...any)) {
	if !fa.Enabled {
		return
	}
	if fa.Listen == "" && len(fa.TrustedCIDRs) == 0 {
		bad(nil, "forward_auth: set listen (a listener for the ingress only) or trusted_cidrs (the ingress's addresses), or nobody may ask for a verdict")
	}
	if fa.Listen != "" {
		if err := checkAddr(fa.Listen); err != nil {
			bad(keys("forward_auth.listen"), "forward_auth.listen %q: %v", fa.Listen, err)
		}
	}
}
