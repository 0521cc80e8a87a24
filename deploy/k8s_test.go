package deploy_test

import (
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

type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Resources  []string          `yaml:"resources"` // Kustomization
	Spec       yaml.Node         `yaml:"spec"`
}

type deploymentSpec struct {
	Selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"selector"`
	Template struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec struct {
			AutomountServiceAccountToken  *bool `yaml:"automountServiceAccountToken"`
			TerminationGracePeriodSeconds int   `yaml:"terminationGracePeriodSeconds"`
			SecurityContext               struct {
				RunAsNonRoot *bool `yaml:"runAsNonRoot"`
			} `yaml:"securityContext"`
			Containers []container `yaml:"containers"`
			Volumes    []struct {
				Name      string `yaml:"name"`
				ConfigMap *struct {
					Name string `yaml:"name"`
				} `yaml:"configMap"`
				Secret *struct {
					SecretName string `yaml:"secretName"`
					Items      []struct {
						Key  string `yaml:"key"`
						Path string `yaml:"path"`
					} `yaml:"items"`
				} `yaml:"secret"`
			} `yaml:"volumes"`
		} `yaml:"spec"`
	} `yaml:"template"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Lifecycle *struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	StartupProbe   *probe `yaml:"startupProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type serviceSpec struct {
	Selector map[string]string `yaml:"selector"`
	Ports    []struct {
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort any    `yaml:"targetPort"`
	} `yaml:"ports"`
}

// k8sObjects reads every document of the manifests kustomization.yaml lists.
func k8sObjects(t *testing.T) []k8sObject {
	t.Helper()
	var kust k8sObject
	decodeYAML(t, filepath.Join("k8s", "kustomization.yaml"), &kust)
	if kust.Kind != "Kustomization" {
		t.Fatalf("k8s/kustomization.yaml kind %q", kust.Kind)
	}
	files, err := filepath.Glob(filepath.Join("k8s", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b := filepath.Base(f)
		example := strings.HasSuffix(b, ".example.yaml")
		if b != "kustomization.yaml" && !example && !slices.Contains(kust.Resources, b) {
			t.Errorf("%s is not listed in kustomization.yaml", f)
		}
		if example && slices.Contains(kust.Resources, b) {
			t.Errorf("%s is an example, with placeholders: kubectl apply -k would apply it", f)
		}
	}
	var objs []k8sObject
	for _, r := range kust.Resources {
		for _, doc := range yamlDocs(t, filepath.Join("k8s", r)) {
			b, err := yaml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			var o k8sObject
			if err := yaml.Unmarshal(b, &o); err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Errorf("%s: object without apiVersion, kind or name: %+v", r, o)
			}
			if o.Kind == "Secret" {
				// kubectl apply -k would overwrite the real Secret with
				// this file's values at every apply.
				t.Errorf("%s: Secret %s is a resource of kustomization.yaml: create Secrets outside kustomize (see secret.example.yaml)", r, o.Metadata.Name)
			}
			objs = append(objs, o)
		}
	}
	return objs
}

// exampleSecrets are the Secrets of k8s/secret.example.yaml: the keys the
// Deployment reads, with placeholders.
func exampleSecrets(t *testing.T) []k8sObject {
	t.Helper()
	var out []k8sObject
	for _, doc := range yamlDocs(t, filepath.Join("k8s", "secret.example.yaml")) {
		b, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var o k8sObject
		if err := yaml.Unmarshal(b, &o); err != nil || o.Kind != "Secret" {
			t.Fatalf("secret.example.yaml: %v %+v", err, o)
		}
		out = append(out, o)
	}
	return out
}

func find(t *testing.T, objs []k8sObject, kind, name string) k8sObject {
	t.Helper()
	for _, o := range objs {
		if o.Kind == kind && o.Metadata.Name == name {
			return o
		}
	}
	t.Fatalf("no %s %q in deploy/k8s", kind, name)
	return k8sObject{}
}

func portNamed(c container, name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func TestKubernetes(t *testing.T) {
	objs := k8sObjects(t)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.Kind)
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"ConfigMap", "Deployment", "Service"}) {
		t.Fatalf("kinds %v", kinds)
	}
	// The Secrets the pod reads are created outside kustomize; their keys
	// are those of secret.example.yaml.
	objs = append(objs, exampleSecrets(t)...)

	dep := find(t, objs, "Deployment", "shortener")
	var spec deploymentSpec
	if err := dep.Spec.Decode(&spec); err != nil {
		t.Fatal(err)
	}
	labels := spec.Template.Metadata.Labels
	for k, v := range spec.Selector.MatchLabels {
		if labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod labels %v", k, v, labels)
		}
	}
	pod := spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service-account token it does not need")
	}
	byName := map[string]container{}
	for _, c := range pod.Containers {
		byName[c.Name] = c
		checkHardened(t, pod.SecurityContext.RunAsNonRoot, c)
	}
	px, sh := byName["idp-proxy"], byName["shortener"]
	if px.Name == "" || sh.Name == "" || len(pod.Containers) != 2 {
		t.Fatalf("want the containers idp-proxy and shortener, got %v", pod.Containers)
	}

	// The volumes the proxy mounts: the ConfigMap's config.yaml at --config,
	// the Secret's files where the config expects them.
	volumes := map[string]string{} // volume name -> ConfigMap/Secret name
	for _, v := range pod.Volumes {
		switch {
		case v.ConfigMap != nil:
			find(t, objs, "ConfigMap", v.ConfigMap.Name)
			volumes[v.Name] = v.ConfigMap.Name
		case v.Secret != nil:
			find(t, objs, "Secret", v.Secret.SecretName)
			volumes[v.Name] = v.Secret.SecretName
		}
	}
	cfgPath, ok := flagValue(px.Args, "config")
	if !ok {
		t.Fatalf("idp-proxy args %v: no --config", px.Args)
	}
	var cm k8sObject
	var secretDir string
	var secret k8sObject
	for _, m := range px.VolumeMounts {
		src, ok := volumes[m.Name]
		if !ok {
			t.Errorf("idp-proxy mounts unknown volume %s", m.Name)
			continue
		}
		if m.MountPath == cfgPath {
			cm = find(t, objs, "ConfigMap", src)
			if _, ok := cm.Data[m.SubPath]; !ok {
				t.Fatalf("ConfigMap %s has no key %q", src, m.SubPath)
			}
			cm.Data["config.yaml"] = cm.Data[m.SubPath]
		} else if m.SubPath == "" {
			for _, o := range objs {
				if o.Kind == "Secret" && o.Metadata.Name == src {
					secretDir, secret = m.MountPath, o
				}
			}
		}
	}
	if cm.Data == nil || secret.StringData == nil {
		t.Fatalf("idp-proxy must mount its config at %s and a Secret directory", cfgPath)
	}

	// The ConfigMap's config loads and passes idp-proxy's checks, with the
	// Secret's values standing in for the mounted files.
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(cm.Data["config.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := loadRaw(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, key := range []string{"client_secret_file", "session_secret_file"} {
		p, _ := raw[key].(string)
		if path.Dir(p) != secretDir {
			t.Errorf("idp.%s %q is not in the Secret's mount %s", key, p, secretDir)
			continue
		}
		val, ok := secret.StringData[path.Base(p)]
		if !ok {
			t.Errorf("idp.%s: Secret %s has no key %s", key, secret.Metadata.Name, path.Base(p))
			continue
		}
		if key == "session_secret_file" {
			// The example's placeholder is refused at load, as a
			// forgotten one would be in the cluster.
			checkPlaceholderRefused(t, cfgFile, dir, val)
			val = "k3J9d0Vb4tQ1mZ8xW2rN7pL5sH6gF0aE-generated" // as openssl rand -base64 48 would make it
		}
		local := filepath.Join(dir, path.Base(p))
		if err := os.WriteFile(local, []byte(val+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		env = append(env, "IDP_PROXY_IDP_"+strings.ToUpper(key)+"="+local)
	}
	env = append(env, k8sAssertionKey(t, cfgFile, dir, cm.Data["config.yaml"], secretDir, secret, env)...)
	cfg := loadProxyConfig(t, cfgFile, env)
	checkRoutesReachable(t, cm.Data["config.yaml"])

	// Ports and probes: the proxy's listen and ops ports are its named
	// container ports; probes use /healthz and /readyz on the ops port.
	_, listenPort := hostPort(t, cfg.Listen)
	_, opsPort := hostPort(t, cfg.MetricsListen)
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

	// The shortener listens on the pod's loopback, where the proxy's
	// upstream points, and reads its DSN from a Secret that exists.
	listen, _ := flagValue(sh.Args, "listen")
	shHost, shPort := hostPort(t, listen)
	upHost, upPort := hostPort(t, cfg.Upstream.URL)
	if shHost != "127.0.0.1" || upHost != "127.0.0.1" || shPort != upPort {
		t.Errorf("shortener --listen %s and upstream.url %s: want the same port on 127.0.0.1", listen, cfg.Upstream.URL)
	}
	// The shortener verifies its own pod's proxy's assertions, on loopback.
	checkShortenerVerifies(t, sh.Args, cfg, "localhost", listenPort)
	for _, e := range sh.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			s := find(t, objs, "Secret", e.ValueFrom.SecretKeyRef.Name)
			if _, ok := s.StringData[e.ValueFrom.SecretKeyRef.Key]; !ok {
				t.Errorf("env %s: Secret %s has no key %s", e.Name, s.Metadata.Name, e.ValueFrom.SecretKeyRef.Key)
			}
		}
	}
	// A rolling update loses no request only if the kubelet lets the proxy
	// drain and finish: drain_delay + shutdown_timeout < the grace period.
	drain, err1 := time.ParseDuration(cfg.Server.DrainDelay)
	shutdown, err2 := time.ParseDuration(cfg.Server.ShutdownTimeout)
	grace := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second
	if err1 != nil || err2 != nil || drain <= 0 || drain+shutdown >= grace {
		t.Errorf("server.drain_delay %s + shutdown_timeout %s must be > 0 and below terminationGracePeriodSeconds %v",
			cfg.Server.DrainDelay, cfg.Server.ShutdownTimeout, grace)
	}
	// The shortener must outlive the proxy's drain: it is told to stop at
	// the same moment, and a closed upstream during the drain is a 502.
	if sh.Lifecycle == nil || sh.Lifecycle.PreStop == nil || sh.Lifecycle.PreStop.Sleep == nil {
		t.Error("shortener: no preStop sleep: it stops while idp-proxy still forwards to it (502s during a rolling update)")
	} else if sleep := time.Duration(sh.Lifecycle.PreStop.Sleep.Seconds) * time.Second; sleep <= drain || sleep >= grace {
		t.Errorf("shortener preStop sleep %v must exceed server.drain_delay %v and stay below the grace period %v", sleep, drain, grace)
	}
	if len(cfg.IDP.SessionSecretFile) == 0 || len(secret.StringData["session-secret"]) < 32 {
		t.Error("the session secret placeholder must be at least 32 bytes, as idp-proxy requires")
	}

	// The Service selects the pod and exposes only the proxy's port.
	svcObj := find(t, objs, "Service", "shortener")
	var svc serviceSpec
	if err := svcObj.Spec.Decode(&svc); err != nil {
		t.Fatal(err)
	}
	for k, v := range svc.Selector {
		if labels[k] != v {
			t.Errorf("Service selector %s=%s does not match the pod labels %v", k, v, labels)
		}
	}
	if len(svc.Ports) != 1 {
		t.Fatalf("Service ports %+v: want only the proxy's", svc.Ports)
	}
	target := fmt.Sprint(svc.Ports[0].TargetPort)
	if target != "http" && target != fmt.Sprint(listenPort) {
		t.Errorf("Service targets %s, want the proxy's port (http, %d)", target, listenPort)
	}
	if strings.Contains(target, fmt.Sprint(shPort)) || target == "ops" || target == "metrics" {
		t.Errorf("Service targets %s: only the proxy may be exposed", target)
	}
}

// loadRaw reads the idp section of a proxy config file as plain values.
func loadRaw(file string) (map[string]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var doc struct {
		IDP map[string]any `yaml:"idp"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	return doc.IDP, nil
}
