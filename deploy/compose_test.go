package deploy_test

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string `yaml:"image"`
	NetworkMode string `yaml:"network_mode"`
	Build       *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

func TestCompose(t *testing.T) {
	var c composeFile
	decodeYAML(t, "docker-compose.yml", &c)
	var names []string
	for n := range c.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"idp-proxy-1", "idp-proxy-2", "keycloak", "lb", "postgres", "redis", "shortener"}) {
		t.Fatalf("services %v", names)
	}
	for name, s := range c.Services {
		if s.Image == "" {
			t.Errorf("service %s: no image", name)
		}
		if s.Build != nil {
			if _, err := os.Stat(filepath.Join(s.Build.Context, s.Build.Dockerfile)); err != nil {
				t.Errorf("service %s: Dockerfile: %v", name, err)
			}
			if _, err := os.Stat(filepath.Join(s.Build.Context, "go.mod")); err != nil {
				t.Errorf("service %s: the build context must be the module root: %v", name, err)
			}
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
				if _, err := os.Stat(src); err != nil {
					t.Errorf("service %s: bind mount %s: %v", name, src, err)
				}
			} else if _, ok := c.Volumes[src]; !ok {
				t.Errorf("service %s: named volume %s not declared", name, src)
			}
		}
		for dep, cond := range s.DependsOn {
			d, ok := c.Services[dep]
			if !ok {
				t.Errorf("service %s depends on unknown %s", name, dep)
			}
			if cond.Condition == "service_healthy" && d.Healthcheck == nil {
				t.Errorf("service %s waits for %s to be healthy, which has no healthcheck", name, dep)
			}
		}
	}

	realm := loadRealm(t)
	kc := c.Services["keycloak"]
	if !strings.HasPrefix(kc.Image, "quay.io/keycloak/keycloak:26") ||
		!slices.Contains(kc.Command, "start-dev") || !slices.Contains(kc.Command, "--import-realm") {
		t.Errorf("keycloak: image %s command %v", kc.Image, kc.Command)
	}
	if !slices.Contains(kc.Volumes, "./keycloak:/opt/keycloak/data/import:ro") {
		t.Errorf("keycloak: the realm directory is not mounted for import: %v", kc.Volumes)
	}

	// The idp-proxy replicas: each one's config file, with the environment
	// compose gives it, loads and passes idp-proxy's own checks, and both
	// run the same file with the same secrets (checkReplicas).
	px := c.Services[replicaNames[0]]
	cfg := checkReplicas(t, c)

	// Keycloak's fixed hostname is the proxy's server_url, on Keycloak's port.
	if kc.Environment["KC_HOSTNAME"] != cfg.IDP.ServerURL {
		t.Errorf("KC_HOSTNAME %q != idp.server_url %q: token issuers would not match", kc.Environment["KC_HOSTNAME"], cfg.IDP.ServerURL)
	}
	kcHost, kcPort := hostPort(t, cfg.IDP.ServerURL)
	if kcHost != "keycloak" || !slices.Contains(kc.Ports, fmt.Sprintf("%d:%d", kcPort, kcPort)) {
		t.Errorf("idp.server_url %s vs keycloak ports %v", cfg.IDP.ServerURL, kc.Ports)
	}
	if cfg.IDP.Realm != realm.Realm {
		t.Errorf("idp.realm %q, realm export %q", cfg.IDP.Realm, realm.Realm)
	}
	web := realm.client(t, cfg.IDP.ClientID)
	if px.Environment["IDP_PROXY_IDP_CLIENT_SECRET"] != web.Secret {
		t.Errorf("idp-proxy's client secret differs from the realm's client %s", web.ClientID)
	}
	if !slices.Contains(web.RedirectURIs, cfg.IDP.RedirectURI) {
		t.Errorf("redirect_uri %s not registered in the realm (%v)", cfg.IDP.RedirectURI, web.RedirectURIs)
	}
	for _, aud := range cfg.IDP.OptionalAudiences {
		if c := realm.client(t, aud); !c.ServiceAccountsEnabled {
			t.Errorf("optional audience %s is not a service-account client", aud)
		}
	}
	// Tokens carry the proxy's client in aud (an audience mapper), which
	// is preferred over accepting them by azp (optional_audiences): user
	// tokens of the web client and service tokens of every service-account
	// client.
	for _, c := range realm.Clients {
		if c.ClientID != cfg.IDP.ClientID && !c.ServiceAccountsEnabled {
			continue
		}
		if !slices.Contains(c.audiences(), cfg.IDP.ClientID) && !slices.Contains(cfg.IDP.OptionalAudiences, c.ClientID) {
			t.Errorf("client %s: its tokens would not carry aud %q (add an oidc-audience-mapper) and it is not in optional_audiences",
				c.ClientID, cfg.IDP.ClientID)
		}
	}
	for _, r := range cfg.Routes {
		for _, role := range r.Roles {
			if !slices.Contains(realm.realmRoles(), role) {
				t.Errorf("route %q needs realm role %s, not in the realm", r.Match, role)
			}
		}
		for client, roles := range r.ClientRoles {
			for _, role := range roles {
				if !slices.Contains(realm.clientRoles(client), role) {
					t.Errorf("route %q needs client role %s/%s, not in the realm", r.Match, client, role)
				}
			}
		}
	}

	// Ports: the load balancer is published, on the replicas' port; the
	// redirect URI is the published load balancer. Keycloak's back-channel
	// logout goes to the load balancer too, on the compose network.
	_, listenPort := hostPort(t, cfg.Listen)
	checkLoadBalancer(t, c, listenPort)
	if want := fmt.Sprintf("http://localhost:%d/auth/callback", listenPort); cfg.IDP.RedirectURI != want {
		t.Errorf("redirect_uri %s, want %s", cfg.IDP.RedirectURI, want)
	}
	checkRealmLogout(t, c, web, cfg, listenPort)

	// The shortener: the proxy's upstream, not published, on PostgreSQL,
	// in the load balancer's network namespace (so that the assertion
	// issuer, the published entry point on localhost, is reachable from it).
	sh := c.Services["shortener"]
	if len(sh.Ports) != 0 {
		t.Errorf("shortener publishes %v: it must be reachable only through the proxy", sh.Ports)
	}
	if sh.NetworkMode != "service:lb" || sh.DependsOn["lb"].Condition != "service_started" {
		t.Errorf("shortener network_mode %q, depends_on %v: want the load balancer's namespace (service:lb), started after it", sh.NetworkMode, sh.DependsOn)
	}
	upHost, upPort := hostPort(t, cfg.Upstream.URL)
	listen, _ := flagValue(sh.Command, "listen")
	if _, p := hostPort(t, listen); upHost != "lb" || p != upPort {
		t.Errorf("upstream.url %s vs shortener --listen %s in the load balancer's namespace", cfg.Upstream.URL, listen)
	}
	checkComposeAssertion(t, c, sh, cfg, listenPort)
	if base, _ := flagValue(sh.Command, "base-url"); base != fmt.Sprintf("http://localhost:%d", listenPort) {
		t.Errorf("shortener --base-url %q must be the published proxy", base)
	}
	store, _ := flagValue(sh.Command, "store")
	dsn, err := url.Parse(store)
	if err != nil || dsn.Scheme != "postgres" {
		t.Fatalf("shortener --store %q: want a postgres:// DSN", store)
	}
	pg := c.Services["postgres"].Environment
	pass, _ := dsn.User.Password()
	if dsn.Hostname() != "postgres" || dsn.User.Username() != pg["POSTGRES_USER"] || pass != pg["POSTGRES_PASSWORD"] ||
		strings.TrimPrefix(dsn.Path, "/") != pg["POSTGRES_DB"] {
		t.Errorf("shortener --store %s does not match the postgres service %v", store, pg)
	}
	if _, ok := sh.DependsOn["postgres"]; !ok {
		t.Error("shortener does not wait for postgres")
	}
	for _, name := range replicaNames {
		if _, ok := c.Services[name].DependsOn["keycloak"]; !ok {
			t.Errorf("%s does not wait for keycloak", name)
		}
	}
}

// replicaNames are the idp-proxy services of the compose file.
var replicaNames = []string{"idp-proxy-1", "idp-proxy-2"}

// checkReplicas loads each replica's configuration (the mounted --config
// file with the replica's environment) with idp-proxy's own checks, checks
// that the replicas are interchangeable (same file, same secrets: a login
// started on one completes on the other) and share their sessions in the
// compose file's Redis, and returns the configuration.
func checkReplicas(t *testing.T, c composeFile) proxyFile {
	t.Helper()
	var (
		cfg       proxyFile
		firstFile string
		firstEnv  map[string]string
		opsPorts  []string
	)
	for i, name := range replicaNames {
		px := c.Services[name]
		cfgPath, _ := flagValue(px.Command, "config")
		var mounted string
		for _, v := range px.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) >= 2 && parts[1] == cfgPath {
				mounted = parts[0]
			}
		}
		if mounted == "" {
			t.Fatalf("%s: --config %q is not a mounted file: %v", name, cfgPath, px.Volumes)
		}
		var env []string
		for k, v := range px.Environment {
			env = append(env, k+"="+v)
		}
		got := loadProxyConfig(t, mounted, env)
		if i == 0 {
			cfg, firstFile, firstEnv = got, mounted, px.Environment
		} else if mounted != firstFile || !maps.Equal(px.Environment, firstEnv) {
			t.Errorf("%s runs %s, %s runs %s, same environment (secrets): %v: the replicas must share the file and the secrets",
				name, mounted, replicaNames[0], firstFile, maps.Equal(px.Environment, firstEnv))
		}
		if px.Environment["IDP_PROXY_IDP_SESSION_SECRET"] == "" {
			t.Errorf("%s: no session secret in its environment", name)
		}
		// Only the operations port is published, on loopback, on a port of
		// its own; the proxy port is reached through the load balancer.
		_, listenPort := hostPort(t, got.Listen)
		_, opsPort := hostPort(t, got.MetricsListen)
		if len(px.Ports) != 1 || !strings.HasPrefix(px.Ports[0], "127.0.0.1:") ||
			!strings.HasSuffix(px.Ports[0], fmt.Sprintf(":%d", opsPort)) || strings.HasSuffix(px.Ports[0], fmt.Sprintf(":%d", listenPort)) {
			t.Errorf("%s ports %v, want only its operations port %d on 127.0.0.1", name, px.Ports, opsPort)
		}
		opsPorts = append(opsPorts, px.Ports...)
		if px.DependsOn["redis"].Condition != "service_healthy" {
			t.Errorf("%s does not wait for redis to be healthy", name)
		}
	}
	if slices.Sort(opsPorts); len(slices.Compact(opsPorts)) != len(replicaNames) {
		t.Errorf("the replicas publish their operations ports on the same host port: %v", opsPorts)
	}

	// Sessions: in Redis, the compose file's redis service.
	if !cfg.Session.Enabled || cfg.Session.Store != "redis" {
		t.Fatalf("session %+v: want enabled with store redis (two replicas)", cfg.Session)
	}
	ru, err := url.Parse(cfg.Session.RedisURL)
	if err != nil || ru.Scheme != "redis" {
		t.Fatalf("session.redis_url %q: want redis://", cfg.Session.RedisURL)
	}
	rs, ok := c.Services[ru.Hostname()]
	if !ok || !strings.HasPrefix(rs.Image, "redis:") {
		t.Fatalf("session.redis_url host %q is not the compose file's Redis service", ru.Hostname())
	}
	if port := ru.Port(); port != "6379" || slices.Contains(rs.Command, "--port") {
		t.Errorf("session.redis_url port %q, Redis command %v: want Redis's default 6379", port, rs.Command)
	}
	if rs.Healthcheck == nil || len(rs.Ports) != 0 {
		t.Errorf("redis: healthcheck %v, ports %v: want a healthcheck and no published port (it holds tokens)", rs.Healthcheck, rs.Ports)
	}
	return cfg
}

// checkLoadBalancer checks the lb service: published on listenPort, it
// forwards to every replica on listenPort and waits for them.
func checkLoadBalancer(t *testing.T, c composeFile, listenPort int) {
	t.Helper()
	lb := c.Services["lb"]
	if !slices.Contains(lb.Ports, fmt.Sprintf("%d:%d", listenPort, listenPort)) {
		t.Errorf("lb ports %v, want %d published", lb.Ports, listenPort)
	}
	if from, _ := flagValue(lb.Command, "from"); from != fmt.Sprintf(":%d", listenPort) {
		t.Errorf("lb --from %q, want :%d (plain HTTP on the published port)", from, listenPort)
	}
	var want []string
	for _, name := range replicaNames {
		want = append(want, fmt.Sprintf("%s:%d", name, listenPort))
		if _, ok := lb.DependsOn[name]; !ok {
			t.Errorf("lb does not wait for %s", name)
		}
	}
	if to := flagValues(lb.Command, "to"); !slices.Equal(to, want) {
		t.Errorf("lb --to %v, want the replicas %v", to, want)
	}
	if slices.Contains(lb.Command, "--change-host-header") {
		t.Error("lb must pass the Host header through")
	}
}

// checkRealmLogout checks the realm's logout settings of the proxy's
// client against the compose file and the proxy's configuration:
// back-channel logout through the load balancer with the session (sid)
// required, and the post-logout redirect URI registered.
func checkRealmLogout(t *testing.T, c composeFile, web realmClient, cfg proxyFile, listenPort int) {
	t.Helper()
	if web.FrontchannelLogout {
		t.Error("client shortener: front-channel logout on; idp-proxy takes Keycloak's back-channel logout")
	}
	bu, err := url.Parse(web.Attributes["backchannel.logout.url"])
	if err != nil || bu.Scheme != "http" {
		t.Fatalf("client shortener: backchannel.logout.url %q", web.Attributes["backchannel.logout.url"])
	}
	if want := strings.TrimSuffix(cfg.IDP.AuthPrefix, "/") + "/backchannel-logout"; bu.Path != want {
		t.Errorf("backchannel.logout.url path %s, want %s", bu.Path, want)
	}
	if _, ok := c.Services[bu.Hostname()]; bu.Hostname() != "lb" || !ok || bu.Port() != strconv.Itoa(listenPort) {
		t.Errorf("backchannel.logout.url %s: want the load balancer (lb:%d) as Keycloak reaches it", bu, listenPort)
	}
	if web.Attributes["backchannel.logout.session.required"] != "true" {
		t.Error("client shortener: backchannel.logout.session.required must be true (logout tokens name the sid)")
	}
	pl := cfg.Session.PostLogoutRedirectURI
	registered := false
	for _, pattern := range strings.Split(web.Attributes["post.logout.redirect.uris"], "##") {
		if pattern == pl || strings.HasSuffix(pattern, "*") && strings.HasPrefix(pl, strings.TrimSuffix(pattern, "*")) {
			registered = true
		}
	}
	if pl == "" || !registered {
		t.Errorf("session.post_logout_redirect_uri %q not in the realm's post.logout.redirect.uris %q", pl, web.Attributes["post.logout.redirect.uris"])
	}
}

// flagValues returns every value of a repeated --name flag in args.
func flagValues(args []string, name string) []string {
	var out []string
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			out = append(out, v)
		} else if a == "--"+name && i+1 < len(args) {
			out = append(out, args[i+1])
		}
	}
	return out
}

// checkComposeAssertion: the shortener verifies the assertion the proxy
// signs for it (credential: assertion), never trusting identity headers:
// --trust-issuer is the proxy's assertion.issuer_url, the published load
// balancer on localhost (the shortener shares its network namespace),
// --trust-audience the upstream's audience, and the signing key lives in
// a named volume every replica mounts, so both sign with the same key.
func checkComposeAssertion(t *testing.T, c composeFile, sh composeService, cfg proxyFile, listenPort int) {
	t.Helper()
	checkShortenerVerifies(t, sh.Command, cfg, "localhost", listenPort)
	keyDir := filepath.Dir(cfg.Assertion.KeyFile)
	var sources []string
	for _, name := range replicaNames {
		src := ""
		for _, v := range c.Services[name].Volumes {
			parts := strings.Split(v, ":")
			if len(parts) >= 2 && parts[1] == keyDir && (len(parts) == 2 || parts[2] != "ro") {
				src = parts[0]
			}
		}
		if _, ok := c.Volumes[src]; !ok {
			t.Errorf("%s: assertion.key_file %s is not in a writable named volume: %v", name, cfg.Assertion.KeyFile, c.Services[name].Volumes)
		}
		sources = append(sources, src)
	}
	if len(slices.Compact(sources)) != 1 {
		t.Errorf("the replicas keep their assertion keys in different volumes %v: they must share one", sources)
	}
}
