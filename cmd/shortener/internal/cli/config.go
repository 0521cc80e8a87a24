package cli

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"
	"go.opentelemetry.io/otel/trace"

	"github.com/idp-proxy/idp-proxy/internal/tracing"
	"github.com/idp-proxy/idp-proxy/pkg/idp"
)

// config is the resolved configuration of one run.
type config struct {
	Listen         string
	Store          string
	BaseURL        string
	LogFormat      string // auto | json | text
	LogLevel       slog.Level
	AccessLog      bool
	MetricsListen  string // an address, metricsOnAPI (/metrics on the API listener) or "off"
	TrustIdentity  bool
	IdentityHeader string
	// TrustIssuer is idp-proxy's assertion issuer: the caller is the
	// subject of the verified assertion in AssertionHeader, for the
	// audience TrustAudience.
	TrustIssuer     string
	TrustAudience   string
	AssertionHeader string
	ShutdownTimeout time.Duration
	DrainDelay      time.Duration // on SIGTERM: /health fails, listener still accepts
	StoreTimeout    time.Duration // bound of each store call
	Cache           bool          // keep found links in the redirect cache
	CacheSize       int           // links kept in it; 0 (deprecated) = no cache
	CacheTTL        time.Duration // how long a cached link is served
	// CacheStaleIfError: how long past CacheTTL a cached link is served
	// while the store fails; 0 never.
	CacheStaleIfError time.Duration

	CustomCodes        bool          // creators may choose their code
	Page               bool          // serve the web page at GET /
	LoginURL           string        // the page's sign-in link
	LogoutURL          string        // the page's sign-out link ("" none)
	UsernameHeader     string        // header of the name the page shows, with TrustIdentity
	AdminRoles         []string      // roles that may read and delete every link
	RolesHeader        string        // header of the caller's roles, with TrustIdentity
	VisitFlushInterval time.Duration // how often visit counts are written
	VisitStats         bool          // keep per-visit statistics
	VisitRetentionDays int           // days raw visits are kept
	GeoIPFile          string        // MaxMind-format country database; "" = no countries
	ClientIPHeader     string        // header with the client's address (last entry); "" = the peer address

	// Tracing exports OpenTelemetry spans as the OTEL_* variables say;
	// TraceParentFrom are the callers whose traceparent is continued.
	Tracing         bool
	TraceParentFrom []netip.Prefix
	// tracerProvider is set by run when Tracing is on.
	tracerProvider trace.TracerProvider

	// In-process pkg/idp mode (on when IDPServerURL or IDPIssuerURL is
	// set): POST /shorten needs a valid access token, and the token's
	// subject becomes the link's creator.
	IDPServerURL         string
	IDPRealm             string
	IDPIssuerURL         string
	IDPClaimsPreset      idp.ClaimPreset
	IDPClientID          string
	IDPAudience          string
	IDPOptionalAudiences []string
	IDPCreateRoles       []string
	IDPTokenLocation     string // header | cookie
	IDPCookieName        string
}

// loadConfig reads every setting from v (flags over environment over
// defaults) and checks it. Booleans and durations are parsed strictly: a
// typo in the environment is an error, not a silent default.
func loadConfig(v *viper.Viper) (config, error) {
	var errs []error
	getBool := func(key string) bool {
		s := v.GetString(key)
		b, err := strconv.ParseBool(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("shortener: %s: %q is not a boolean", key, s))
		}
		return b
	}
	cfg := config{
		Listen:         v.GetString("listen"),
		Cache:          getBool("cache"),
		Store:          v.GetString("store"),
		BaseURL:        v.GetString("base-url"),
		LogFormat:      strings.ToLower(v.GetString("log-format")),
		AccessLog:      getBool("access-log"),
		MetricsListen:  v.GetString("metrics-listen"),
		TrustIdentity:  getBool("trust-identity-headers"),
		IdentityHeader: v.GetString("identity-header"),

		TrustIssuer:     v.GetString("trust-issuer"),
		TrustAudience:   v.GetString("trust-audience"),
		AssertionHeader: v.GetString("assertion-header"),

		IDPServerURL:         v.GetString("idp-server-url"),
		IDPRealm:             v.GetString("idp-realm"),
		IDPIssuerURL:         v.GetString("idp-issuer-url"),
		IDPClientID:          v.GetString("idp-client-id"),
		IDPAudience:          v.GetString("idp-audience"),
		IDPOptionalAudiences: splitList(v.GetStringSlice("idp-optional-audiences")),
		IDPCreateRoles:       splitList(v.GetStringSlice("idp-create-roles")),
		IDPTokenLocation:     strings.ToLower(v.GetString("idp-token-location")),
		IDPCookieName:        v.GetString("idp-cookie-name"),

		CustomCodes: getBool("custom-codes"),
		Page:        getBool("page"),
		LoginURL:    v.GetString("login-url"),
		LogoutURL:   v.GetString("logout-url"),

		UsernameHeader: v.GetString("username-header"),
		AdminRoles:     splitList(v.GetStringSlice("admin-roles")),
		RolesHeader:    v.GetString("roles-header"),
		VisitStats:     getBool("visit-stats"),
		GeoIPFile:      v.GetString("geoip-file"),
		ClientIPHeader: v.GetString("client-ip-header"),
	}
	rd := v.GetString("visit-retention-days")
	if n, err := strconv.Atoi(rd); err != nil || n < 1 || n > 3660 {
		errs = append(errs, fmt.Errorf("shortener: visit-retention-days: %q is not a number of days from 1 to 3660", rd))
	} else {
		cfg.VisitRetentionDays = n
	}
	if strings.ContainsAny(cfg.ClientIPHeader, " :\t\r\n") {
		errs = append(errs, fmt.Errorf("shortener: client-ip-header %q is not a header name", cfg.ClientIPHeader))
	}
	if cfg.GeoIPFile != "" && !cfg.VisitStats {
		errs = append(errs, errors.New("shortener: --geoip-file needs --visit-stats"))
	}
	fi := v.GetString("visit-flush-interval")
	if d, err := time.ParseDuration(fi); err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("shortener: visit-flush-interval: %q is not a positive duration", fi))
	} else {
		cfg.VisitFlushInterval = d
	}
	switch cfg.IDPTokenLocation {
	case "header", "cookie":
	default:
		errs = append(errs, fmt.Errorf("shortener: idp-token-location %q: want header or cookie", cfg.IDPTokenLocation))
	}
	if cfg.TrustIdentity && (cfg.RolesHeader == "" || strings.ContainsAny(cfg.RolesHeader, " :\t\r\n")) {
		errs = append(errs, fmt.Errorf("shortener: roles-header %q is not a header name", cfg.RolesHeader))
	}
	st := v.GetString("shutdown-timeout")
	d, err := time.ParseDuration(st)
	if err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("shortener: shutdown-timeout: %q is not a positive duration", st))
	}
	cfg.ShutdownTimeout = d
	dd := v.GetString("drain-delay")
	if d, err := time.ParseDuration(dd); err != nil || d < 0 {
		errs = append(errs, fmt.Errorf("shortener: drain-delay: %q is not a duration ≥ 0", dd))
	} else {
		cfg.DrainDelay = d
	}
	sto := v.GetString("store-timeout")
	if d, err := time.ParseDuration(sto); err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("shortener: store-timeout: %q is not a positive duration", sto))
	} else {
		cfg.StoreTimeout = d
	}
	cs := v.GetString("cache-size")
	if n, err := strconv.Atoi(cs); err != nil || n < 0 {
		errs = append(errs, fmt.Errorf("shortener: cache-size: %q is not a number ≥ 0", cs))
	} else {
		cfg.CacheSize = n
	}
	ct := v.GetString("cache-ttl")
	if d, err := time.ParseDuration(ct); err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("shortener: cache-ttl: %q is not a positive duration", ct))
	} else {
		cfg.CacheTTL = d
	}
	cse := v.GetString("cache-stale-if-error")
	if d, err := time.ParseDuration(cse); err != nil || d < 0 {
		errs = append(errs, fmt.Errorf("shortener: cache-stale-if-error: %q is not a duration ≥ 0", cse))
	} else {
		cfg.CacheStaleIfError = d
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(v.GetString("log-level"))); err != nil {
		errs = append(errs, fmt.Errorf("shortener: log-level: %w", err))
	}
	switch cfg.LogFormat {
	case "auto", "json", "text":
	default:
		errs = append(errs, fmt.Errorf("shortener: log-format %q: want json, text or auto", cfg.LogFormat))
	}
	if cfg.Listen == "" {
		errs = append(errs, errors.New("shortener: listen: empty address"))
	}
	if cfg.MetricsListen == "" {
		errs = append(errs, fmt.Errorf("shortener: metrics-listen: empty: give an address (default %s), %q to serve /metrics on --listen, or \"off\"", defaultMetricsListen, metricsOnAPI))
	}
	if cfg.TrustIdentity && (cfg.IdentityHeader == "" || strings.ContainsAny(cfg.IdentityHeader, " :\t\r\n")) {
		errs = append(errs, fmt.Errorf("shortener: identity-header %q is not a header name", cfg.IdentityHeader))
	}
	if cfg.TrustIssuer != "" {
		if cfg.TrustIdentity || cfg.IDPServerURL != "" || cfg.IDPIssuerURL != "" {
			errs = append(errs, errors.New("shortener: --trust-issuer excludes --trust-identity-headers, --idp-server-url and --idp-issuer-url: pick one source of identity"))
		}
		if cfg.TrustAudience == "" {
			errs = append(errs, errors.New("shortener: --trust-issuer needs --trust-audience (this shortener's audience in idp-proxy's upstream)"))
		}
		if cfg.AssertionHeader == "" || strings.ContainsAny(cfg.AssertionHeader, " :\t\r\n") {
			errs = append(errs, fmt.Errorf("shortener: assertion-header %q is not a header name", cfg.AssertionHeader))
		}
	} else if cfg.TrustAudience != "" {
		errs = append(errs, errors.New("shortener: --trust-audience needs --trust-issuer"))
	}
	if _, _, err := parseStore(cfg.Store); err != nil {
		errs = append(errs, err)
	}
	// "" stays "": idp.ClaimMapping's zero preset is Keycloak's.
	cfg.IDPClaimsPreset = idp.ClaimPreset(v.GetString("idp-claims-preset"))
	if _, err := idp.ParseClaimPreset(string(cfg.IDPClaimsPreset)); err != nil {
		errs = append(errs, fmt.Errorf("shortener: idp-claims-preset: %w", err))
	}
	switch {
	case cfg.IDPServerURL != "" || cfg.IDPIssuerURL != "":
		if cfg.TrustIdentity {
			errs = append(errs, errors.New("shortener: --idp-server-url (or --idp-issuer-url) and --trust-identity-headers exclude each other: pick one source of identity"))
		}
		if cfg.IDPIssuerURL != "" && (cfg.IDPServerURL != "" || cfg.IDPRealm != "") {
			errs = append(errs, errors.New("shortener: --idp-issuer-url excludes --idp-server-url and --idp-realm: give the issuer URL (any OpenID Connect provider) or a Keycloak server URL and realm"))
		}
		// The rest (realm, client ID, URL shape) is checked by idp.New,
		// which names the missing or malformed option.
	case cfg.IDPRealm != "" || cfg.IDPClientID != "" || len(cfg.IDPCreateRoles) > 0 || len(cfg.IDPOptionalAudiences) > 0 || cfg.IDPAudience != "" || cfg.IDPTokenLocation == "cookie" || cfg.IDPClaimsPreset != "":
		errs = append(errs, errors.New("shortener: --idp-* options need --idp-server-url or --idp-issuer-url"))
	}
	cfg.Tracing = getBool("tracing")
	if tpf, err := tracing.ParsePrefixes(splitList(v.GetStringSlice("trace-parent-from"))); err != nil {
		errs = append(errs, fmt.Errorf("shortener: trace-parent-from: %w", err))
	} else {
		cfg.TraceParentFrom = tpf
	}
	return cfg, errors.Join(errs...)
}

// splitList flattens comma-separated values (environment variables arrive
// as one string) and drops empty items.
func splitList(in []string) []string {
	var out []string
	for _, v := range in {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}
