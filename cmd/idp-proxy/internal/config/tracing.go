package config

import "github.com/idp-proxy/idp-proxy/internal/tracing"

// Tracing is the tracing section: OpenTelemetry spans exported over OTLP,
// configured by the standard OTEL_* environment variables (endpoint,
// protocol, sampler, service name); see README, "Tracing".
type Tracing struct {
	// Enabled records and exports spans. [false]
	Enabled bool `mapstructure:"enabled"`
	// TrustedCIDRs are the callers (CIDR prefixes or addresses) whose W3C
	// traceparent and tracestate the proxy continues; from any other
	// caller a traceparent starts a new trace linked to it. [none]
	TrustedCIDRs []string `mapstructure:"trusted_cidrs"`
}

func (t Tracing) validate(bad func([]string, string, ...any)) {
	if _, err := tracing.ParsePrefixes(t.TrustedCIDRs); err != nil {
		bad(keys("tracing.trusted_cidrs"), "tracing.trusted_cidrs: %v", err)
	}
}
