package deploy_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// helmCase is one rendering of a chart: an example values file, with the
// arguments its comment's helm install command adds.
type helmCase struct {
	chart, release, example string
	set                     []string
}

var helmCases = []helmCase{
	{chart: "idp-proxy", release: "idp-proxy", example: "minimal.yaml"},
	{chart: "idp-proxy", release: "shortener", example: "sidecar.yaml"},
	{chart: "idp-proxy", release: "shortener", example: "sidecar.yaml", set: []string{"secrets.clientSecret=test-client-secret"}},
	{chart: "idp-proxy", release: "sso", example: "many-apps.yaml"},
	{chart: "shortener", release: "shortener", example: "postgres.yaml"},
}

func (c helmCase) args() []string {
	args := []string{"-f", filepath.Join("helm", c.chart, "examples", c.example)}
	for _, s := range c.set {
		args = append(args, "--set", s)
	}
	return args
}

// Every example values file of every chart is linted (--strict: warnings
// fail too) and rendered, and the rendered manifests are checked as a pod
// would run them: idp-proxy's ConfigMap passes idp-proxy's own
// check-config with the Secrets' files and the container's environment.
func TestHelmCharts(t *testing.T) {
	charts, err := filepath.Glob(filepath.Join("helm", "*", "Chart.yaml"))
	if err != nil || len(charts) != 2 {
		t.Fatalf("want the charts idp-proxy and shortener under deploy/helm, got %v %v", charts, err)
	}
	examples, _ := filepath.Glob(filepath.Join("helm", "*", "examples", "*.yaml"))
	for _, ex := range examples {
		chart := filepath.Base(filepath.Dir(filepath.Dir(ex)))
		if !slices.ContainsFunc(helmCases, func(c helmCase) bool { return c.chart == chart && c.example == filepath.Base(ex) }) {
			t.Errorf("%s is not among helmCases: every example must be linted and rendered", ex)
		}
	}
	for _, c := range helmCases {
		t.Run(strings.Join(append([]string{c.chart, strings.TrimSuffix(c.example, ".yaml")}, c.set...), "/"), func(t *testing.T) {
			chart := filepath.Join("helm", c.chart)
			if _, err := runHelm(t, append([]string{"lint", "--strict", chart}, c.args()...)...); err != nil {
				t.Fatal(err)
			}
			objs := helmTemplate(t, c.release, chart, c.args()...)
			switch c.chart {
			case "idp-proxy":
				checkProxyChart(t, objs)
			case "shortener":
				checkShortenerChart(t, objs)
			}
		})
	}
}

// renderedPod is the pod of a rendered Deployment.
func renderedPod(t *testing.T, objs []k8sObject) (deploymentSpec, *int) {
	t.Helper()
	dep := only(t, objs, "Deployment")
	var spec deploymentSpec
	var replicas struct {
		Replicas *int `yaml:"replicas"`
	}
	if err := dep.Spec.Decode(&spec); err != nil {
		t.Fatal(err)
	}
	if err := dep.Spec.Decode(&replicas); err != nil {
		t.Fatal(err)
	}
	if !selects(spec.Selector.MatchLabels, spec.Template.Metadata.Labels) {
		t.Errorf("Deployment selector %v does not select its pods %v", spec.Selector.MatchLabels, spec.Template.Metadata.Labels)
	}
	pod := spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service-account token it does not need")
	}
	for _, c := range pod.Containers {
		checkHardened(t, pod.SecurityContext.RunAsNonRoot, c)
	}
	return spec, replicas.Replicas
}

// secretValue is the value of key in the rendered Secret name, or, for a
// Secret the chart does not render (an existing one), a value of the kind
// an operator would put there.
func secretValue(t *testing.T, objs []k8sObject, name, key string) string {
	t.Helper()
	for _, o := range objs {
		if o.Kind == "Secret" && o.Metadata.Name == name {
			v, ok := o.Data[key]
			if !ok {
				t.Fatalf("Secret %s has no key %s", name, key)
			}
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				t.Fatalf("Secret %s key %s: %v", name, key, err)
			}
			return string(b)
		}
	}
	switch {
	case strings.Contains(key, "session"):
		return "k3J9d0Vb4tQ1mZ8xW2rN7pL5sH6gF0aE-existing-secret" // openssl rand -base64 48 would make it
	case strings.Contains(key, "redis"):
		return "redis://:password@redis.data.svc:6379/0"
	case key == "dsn":
		return "postgres://shortener:password@postgres.data.svc:5432/shortener?sslmode=require"
	}
	return "test-" + key
}

// checkProxyChart checks the idp-proxy chart's manifests against each
// other and runs idp-proxy's check-config on the ConfigMap's config.yaml,
// with the files and environment the pod gives it.
func checkProxyChart(t *testing.T, objs []k8sObject) {
	t.Helper()
	spec, replicas := renderedPod(t, objs)
	pod := spec.Template.Spec
	labels := spec.Template.Metadata.Labels
	if len(pod.Containers) == 0 || pod.Containers[0].Name != "idp-proxy" {
		t.Fatalf("the first container must be idp-proxy: %+v", pod.Containers)
	}
	px := pod.Containers[0]
	cfgPath, ok := flagValue(px.Args, "config")
	if !ok {
		t.Fatalf("idp-proxy args %v: no --config", px.Args)
	}

	// The ConfigMap at --config, the Secret's items as files in a
	// directory (as the kubelet mounts them).
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config.yaml")
	var configYAML, secretMount string
	secretFiles := map[string]string{} // file name in the mount -> value
	for _, m := range px.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name != m.Name {
				continue
			}
			switch {
			case v.ConfigMap != nil && m.MountPath == cfgPath:
				for _, o := range objs {
					if o.Kind == "ConfigMap" && o.Metadata.Name == v.ConfigMap.Name {
						configYAML = o.Data[m.SubPath]
					}
				}
			case v.Secret != nil && m.SubPath == "":
				secretMount = m.MountPath
				if len(v.Secret.Items) == 0 {
					t.Errorf("Secret volume %s: no items: an existing Secret's keys must be mapped to the file names the config names", v.Name)
				}
				for _, it := range v.Secret.Items {
					secretFiles[it.Path] = secretValue(t, objs, v.Secret.SecretName, it.Key)
				}
			}
		}
	}
	if configYAML == "" || secretMount == "" {
		t.Fatalf("idp-proxy must mount a ConfigMap's config at %s and a Secret directory: %+v", cfgPath, px.VolumeMounts)
	}
	if err := os.WriteFile(cfgFile, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := loadRaw(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, key := range []string{"client_secret_file", "session_secret_file"} {
		p, _ := raw[key].(string)
		if p == "" {
			continue
		}
		val, ok := secretFiles[path.Base(p)]
		if path.Dir(p) != secretMount || !ok {
			t.Errorf("idp.%s %q: no such file in the Secret mounted at %s (%v)", key, p, secretMount, secretFiles)
			continue
		}
		if key == "session_secret_file" && len(val) < 32 {
			t.Errorf("session secret %q: under 32 bytes", val)
		}
		local := filepath.Join(dir, path.Base(p))
		if err := os.WriteFile(local, []byte(val), 0o600); err != nil {
			t.Fatal(err)
		}
		env = append(env, "IDP_PROXY_IDP_"+strings.ToUpper(key)+"="+local)
	}
	for _, e := range px.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			env = append(env, e.Name+"="+secretValue(t, objs, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key))
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		}
	}
	if keyPath := assertionKeyFile(t, configYAML); keyPath != "" {
		// One signing key for every replica: a file of the Secret.
		val, ok := secretFiles[path.Base(keyPath)]
		if path.Dir(keyPath) != secretMount || !ok {
			t.Errorf("assertion.key_file %q: no such file in the Secret mounted at %s", keyPath, secretMount)
		}
		local := filepath.Join(dir, "assertion-keys")
		if strings.Contains(val, "PRIVATE KEY") {
			_ = os.WriteFile(local, []byte(val), 0o600) // the chart's generated key: it must load
		} else {
			writeAssertionKey(t, local) // an existing Secret's, which the operator provides
		}
		env = append(env, "IDP_PROXY_ASSERTION_KEY_FILE="+local)
	}
	cfg := loadProxyConfig(t, cfgFile, env)
	if cfg.Session.Store == "redis" && cfg.Session.RedisURL == "" {
		t.Error("session.store redis without a Redis URL")
	}

	// Ports, probes (README, "Probes"), the rolling update's budget.
	listenHost, listenPort := hostPort(t, cfg.Listen)
	opsHost, opsPort := hostPort(t, cfg.MetricsListen)
	if listenHost != "0.0.0.0" || opsHost != "0.0.0.0" {
		t.Errorf("listen %s, metrics_listen %s: the Service and the kubelet reach the pod's address, not its loopback", cfg.Listen, cfg.MetricsListen)
	}
	if portNamed(px, "http") != listenPort || portNamed(px, "ops") != opsPort {
		t.Errorf("idp-proxy container ports %+v vs listen %s and metrics_listen %s", px.Ports, cfg.Listen, cfg.MetricsListen)
	}
	for name, want := range map[string]struct {
		p    *probe
		path string
	}{
		"liveness":  {px.LivenessProbe, "/healthz"},
		"readiness": {px.ReadinessProbe, "/readyz"},
		"startup":   {px.StartupProbe, "/healthz"},
	} {
		if want.p == nil || want.p.HTTPGet == nil || want.p.HTTPGet.Path != want.path || fmt.Sprint(want.p.HTTPGet.Port) != "ops" {
			t.Errorf("idp-proxy %s probe: want httpGet %s on port ops, got %+v", name, want.path, want.p)
		}
	}
	drain, err1 := time.ParseDuration(cfg.Server.DrainDelay)
	shutdown, err2 := time.ParseDuration(cfg.Server.ShutdownTimeout)
	grace := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second
	if err1 != nil || err2 != nil || drain <= 0 || drain+shutdown >= grace {
		t.Errorf("server.drain_delay %s + shutdown_timeout %s must be > 0 and below terminationGracePeriodSeconds %v",
			cfg.Server.DrainDelay, cfg.Server.ShutdownTimeout, grace)
	}

	// Sidecar mode: the app on the pod's loopback, where the upstream
	// points, outliving the proxy's drain.
	if len(pod.Containers) > 1 {
		if len(pod.Containers) != 2 {
			t.Fatalf("containers %+v: want idp-proxy and one app", pod.Containers)
		}
		app := pod.Containers[1]
		listen, _ := flagValue(app.Args, "listen")
		appHost, appPort := hostPort(t, listen)
		upHost, upPort := hostPort(t, cfg.Upstream.URL)
		if appHost != "127.0.0.1" || upHost != "127.0.0.1" || appPort != upPort {
			t.Errorf("app --listen %s and upstream.url %s: want the same port on 127.0.0.1", listen, cfg.Upstream.URL)
		}
		if cfg.Upstream.Credential == "assertion" {
			checkShortenerVerifies(t, app.Args, cfg, "localhost", listenPort)
		}
		if app.Lifecycle == nil || app.Lifecycle.PreStop == nil || app.Lifecycle.PreStop.Sleep == nil {
			t.Error("app: no preStop sleep: it stops while idp-proxy still forwards to it")
		} else if s := time.Duration(app.Lifecycle.PreStop.Sleep.Seconds) * time.Second; s <= drain || s >= grace {
			t.Errorf("app preStop sleep %v must exceed server.drain_delay %v and stay below the grace period %v", s, drain, grace)
		}
	} else if u := cfg.Upstream.URL; u != "" {
		if h, _ := hostPort(t, u); h == "127.0.0.1" || h == "localhost" {
			t.Errorf("standalone upstream.url %s is the pod's loopback, where no app runs", u)
		}
	}

	checkProxyChartObjects(t, objs, labels, replicas)
}

// checkProxyChartObjects checks the Service, PodDisruptionBudget,
// HorizontalPodAutoscaler, NetworkPolicy and ServiceMonitor against the
// Deployment's pods.
func checkProxyChartObjects(t *testing.T, objs []k8sObject, labels map[string]string, replicas *int) {
	t.Helper()
	dep := only(t, objs, "Deployment")
	var services []k8sObject
	for _, o := range objs {
		if o.Kind == "Service" {
			services = append(services, o)
		}
	}
	for _, s := range services {
		var svc serviceSpec
		if err := s.Spec.Decode(&svc); err != nil {
			t.Fatal(err)
		}
		if !selects(svc.Selector, labels) {
			t.Errorf("Service %s selector %v does not select the pods %v", s.Metadata.Name, svc.Selector, labels)
		}
		want := "http" // the main Service: the proxy's port only
		if s.Metadata.Name == dep.Metadata.Name+"-metrics" {
			want = "ops"
		}
		if len(svc.Ports) != 1 || fmt.Sprint(svc.Ports[0].TargetPort) != want {
			t.Errorf("Service %s ports %+v: want only %s", s.Metadata.Name, svc.Ports, want)
		}
	}
	var pdb struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
	}
	pdbObj := only(t, objs, "PodDisruptionBudget")
	if err := pdbObj.Spec.Decode(&pdb); err != nil || !selects(pdb.Selector.MatchLabels, labels) {
		t.Errorf("PodDisruptionBudget selector %v does not select the pods %v (%v)", pdb.Selector.MatchLabels, labels, err)
	}
	if has(objs, "HorizontalPodAutoscaler") {
		var hpa struct {
			ScaleTargetRef struct {
				Kind string `yaml:"kind"`
				Name string `yaml:"name"`
			} `yaml:"scaleTargetRef"`
			MinReplicas int `yaml:"minReplicas"`
		}
		hpaObj := only(t, objs, "HorizontalPodAutoscaler")
		_ = hpaObj.Spec.Decode(&hpa)
		if hpa.ScaleTargetRef.Kind != "Deployment" || hpa.ScaleTargetRef.Name != dep.Metadata.Name || hpa.MinReplicas < 1 {
			t.Errorf("HorizontalPodAutoscaler %+v does not scale Deployment %s", hpa, dep.Metadata.Name)
		}
		if replicas != nil {
			t.Error("the Deployment sets replicas under an autoscaler: every upgrade would reset the scale")
		}
	} else if replicas == nil {
		t.Error("the Deployment has no replicas and no autoscaler")
	}
	var np struct {
		PodSelector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"podSelector"`
		Ingress []struct {
			Ports []struct {
				Port any `yaml:"port"`
			} `yaml:"ports"`
		} `yaml:"ingress"`
	}
	npObj := only(t, objs, "NetworkPolicy")
	if err := npObj.Spec.Decode(&np); err != nil || !selects(np.PodSelector.MatchLabels, labels) {
		t.Errorf("NetworkPolicy podSelector %v does not select the pods %v (%v)", np.PodSelector.MatchLabels, labels, err)
	}
	var ports []string
	for _, r := range np.Ingress {
		for _, p := range r.Ports {
			ports = append(ports, fmt.Sprint(p.Port))
		}
	}
	if !slices.Contains(ports, "http") || slices.ContainsFunc(ports, func(p string) bool { return p != "http" && p != "ops" }) {
		t.Errorf("NetworkPolicy opens ports %v: want http, and ops at most", ports)
	}
	if has(objs, "ServiceMonitor") {
		var sm struct {
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Endpoints []struct {
				Port string `yaml:"port"`
				Path string `yaml:"path"`
			} `yaml:"endpoints"`
		}
		smObj := only(t, objs, "ServiceMonitor")
		_ = smObj.Spec.Decode(&sm)
		metrics := find(t, objs, "Service", dep.Metadata.Name+"-metrics")
		if !selects(sm.Selector.MatchLabels, metrics.Metadata.Labels) || len(sm.Endpoints) != 1 ||
			sm.Endpoints[0].Port != "ops" || sm.Endpoints[0].Path != "/metrics" {
			t.Errorf("ServiceMonitor %+v: want /metrics on port ops of Service %s", sm, metrics.Metadata.Name)
		}
		if !slices.Contains(ports, "ops") {
			t.Error("a ServiceMonitor, but the NetworkPolicy lets nobody reach the ops port (networkPolicy.metricsFrom)")
		}
	}
}

// checkShortenerChart checks the shortener chart's manifests: PostgreSQL
// from a Secret, and --trust-identity-headers only behind a NetworkPolicy
// that admits idp-proxy's pods alone.
func checkShortenerChart(t *testing.T, objs []k8sObject) {
	t.Helper()
	spec, _ := renderedPod(t, objs)
	labels := spec.Template.Metadata.Labels
	if len(spec.Template.Spec.Containers) != 1 {
		t.Fatalf("containers %+v: want the shortener only", spec.Template.Spec.Containers)
	}
	sh := spec.Template.Spec.Containers[0]
	listen, _ := flagValue(sh.Args, "listen")
	if _, port := hostPort(t, listen); port != portNamed(sh, "http") {
		t.Errorf("--listen %s is not the container port http %d", listen, portNamed(sh, "http"))
	}
	store := false
	for _, e := range sh.Env {
		if e.Name == "SHORTENER_STORE" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			store = strings.HasPrefix(secretValue(t, objs, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key), "postgres")
		}
	}
	if !store {
		t.Error("SHORTENER_STORE does not come from a Secret (PostgreSQL DSN)")
	}
	if slices.Contains(sh.Args, "--trust-identity-headers") {
		np := networkPolicyFrom(t, objs)
		if !selects(np, map[string]string{"app.kubernetes.io/name": "idp-proxy"}) {
			t.Errorf("--trust-identity-headers behind a NetworkPolicy admitting %v: want idp-proxy's pods only", np)
		}
	}
	// Its drain fits in the grace period: SIGTERM, --drain-delay with
	// /health 503, then --shutdown-timeout for in-flight requests.
	drainFlag, _ := flagValue(sh.Args, "drain-delay")
	shutdownFlag, _ := flagValue(sh.Args, "shutdown-timeout")
	drain, err1 := time.ParseDuration(drainFlag)
	shutdown, err2 := time.ParseDuration(shutdownFlag)
	grace := time.Duration(spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	if err1 != nil || err2 != nil || drain <= 0 || drain+shutdown >= grace {
		t.Errorf("--drain-delay %q + --shutdown-timeout %q must be > 0 and below terminationGracePeriodSeconds %v", drainFlag, shutdownFlag, grace)
	}
	var svc serviceSpec
	svcObj := only(t, objs, "Service")
	if err := svcObj.Spec.Decode(&svc); err != nil || !selects(svc.Selector, labels) ||
		len(svc.Ports) != 1 || fmt.Sprint(svc.Ports[0].TargetPort) != "http" {
		t.Errorf("Service %+v: want the API port of the pods %v only (%v)", svc, labels, err)
	}
}

// networkPolicyFrom is the pod selector of the one NetworkPolicy's rule on
// port http.
func networkPolicyFrom(t *testing.T, objs []k8sObject) map[string]string {
	t.Helper()
	var np struct {
		Ingress []struct {
			Ports []struct {
				Port any `yaml:"port"`
			} `yaml:"ports"`
			From []struct {
				PodSelector *struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				} `yaml:"podSelector"`
				NamespaceSelector yaml.Node `yaml:"namespaceSelector"`
				IPBlock           yaml.Node `yaml:"ipBlock"`
			} `yaml:"from"`
		} `yaml:"ingress"`
	}
	npObj := only(t, objs, "NetworkPolicy")
	if err := npObj.Spec.Decode(&np); err != nil {
		t.Fatal(err)
	}
	for _, r := range np.Ingress {
		if len(r.Ports) == 1 && fmt.Sprint(r.Ports[0].Port) == "http" {
			if len(r.From) != 1 || r.From[0].PodSelector == nil || !r.From[0].NamespaceSelector.IsZero() || !r.From[0].IPBlock.IsZero() {
				t.Fatalf("NetworkPolicy rule on http: %+v: want one podSelector in the namespace", r.From)
			}
			return r.From[0].PodSelector.MatchLabels
		}
	}
	t.Fatal("NetworkPolicy: no rule on port http")
	return nil
}
