package idp

import (
	"context"

	"github.com/idp-proxy/idp-proxy/pkg/idp/internal/token"
)

// Compiled is a Config with its defaults applied, checked and its claim
// mappings compiled, by Compile: what NewCompiled builds a Plugin from,
// so that a program that validates a configuration before it starts the
// plugin (proxy.Compile, check-config) does that work once.
type Compiled struct {
	cfg Config // defaults applied
	// mappings are the compiled claim mappings: the primary issuer's,
	// then each of cfg.Issuers' (nil: the Keycloak preset as is).
	mappings []*token.Mapping
	// deprecated are the former spellings cfg used, which NewCompiled
	// logs.
	deprecated []deprecatedSpelling
}

// Compile applies cfg's defaults and reports every problem of cfg, as
// Validate does; without any, it returns the compiled form. It contacts
// nothing.
func Compile(cfg Config) (*Compiled, error) {
	deprecated := deprecatedSpellings(cfg)
	cfg = cfg.withDefaults()
	mappings, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	return &Compiled{cfg: cfg, mappings: mappings, deprecated: deprecated}, nil
}

// Config returns the configuration c was compiled from, defaults applied
// (as Plugin.Config reports it).
func (c *Compiled) Config() Config { return c.cfg }

// NewCompiled is New for a configuration compiled by Compile.
func NewCompiled(ctx context.Context, c *Compiled) (*Plugin, error) {
	return newPlugin(ctx, c)
}
