package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// helmModule is the Helm release that lints and renders the charts, here
// and in the README's commands. go run builds it from the Go module proxy,
// outside this module (it is never a dependency of the binaries), and the
// Go build cache keeps the executable: the first build takes about two CPU
// minutes, later runs start in about a second.
const helmModule = "helm.sh/helm/v3/cmd/helm@v3.22.0"

var (
	helmOnce sync.Once
	helmBin  string // the executable go run built, when it stays in the build cache
	helmErr  error
)

// requireHelm builds helm once for the package's tests. CI must check the
// charts, so there a helm that cannot be built fails the test; elsewhere
// (no network, no module proxy) the test is skipped with the reason.
func requireHelm(t *testing.T) {
	t.Helper()
	helmOnce.Do(func() {
		// -exec echo prints the executable instead of running it: since Go
		// 1.24 it is kept in the build cache, so later runs skip go run's
		// second or so of staleness checks.
		out, err := exec.Command("go", "run", "-exec", "echo", helmModule).CombinedOutput()
		if err != nil {
			helmErr = fmt.Errorf("go run %s: %v\n%s", helmModule, err, out)
			return
		}
		if bin := strings.TrimSpace(string(out)); filepath.IsAbs(bin) {
			if _, err := os.Stat(bin); err == nil {
				helmBin = bin
			}
		}
	})
	if helmErr == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("helm could not be built, so the charts under deploy/helm are not checked; CI needs the Go module proxy to build it:\n%v", helmErr)
	}
	t.Skipf("helm could not be built; the chart checks run in CI (CI set) and fail there: %v", helmErr)
}

// runHelm runs helm with args in deploy/ and returns its standard output,
// or an error carrying its standard error.
func runHelm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	requireHelm(t)
	cmd := exec.Command("go", append([]string{"run", helmModule}, args...)...)
	if helmBin != "" {
		cmd = exec.Command(helmBin, args...)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out, nil
}

// helmTemplate renders a chart (helm template) into its objects.
func helmTemplate(t *testing.T, release, chart string, args ...string) []k8sObject {
	t.Helper()
	out, err := runHelm(t, append([]string{"template", release, chart, "--namespace", "apps"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	var objs []k8sObject
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("helm template %s: %v\n%s", chart, err, out)
		}
		if o.Kind == "" {
			continue // an empty document
		}
		if o.APIVersion == "" || o.Metadata.Name == "" {
			t.Errorf("helm template %s: object without apiVersion or name: %+v", chart, o)
		}
		objs = append(objs, o)
	}
}

// only returns the one object of kind in objs.
func only(t *testing.T, objs []k8sObject, kind string) k8sObject {
	t.Helper()
	var found []k8sObject
	for _, o := range objs {
		if o.Kind == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s, got %d", kind, len(found))
	}
	return found[0]
}

// has reports whether objs holds an object of kind.
func has(objs []k8sObject, kind string) bool {
	for _, o := range objs {
		if o.Kind == kind {
			return true
		}
	}
	return false
}

// selects reports whether every label of selector is among labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkHardened checks a container's security context and resources, as
// the pod must run them (non-root, read-only root, no privilege, CPU and
// memory requests and limits).
func checkHardened(t *testing.T, podNonRoot *bool, c container) {
	t.Helper()
	sc := c.SecurityContext
	nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (sc.RunAsNonRoot == nil && podNonRoot != nil && *podNonRoot)
	if !nonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container %s: securityContext must be non-root, read-only root, no privilege escalation, drop ALL: %+v", c.Name, sc)
	}
	for _, m := range []map[string]string{c.Resources.Requests, c.Resources.Limits} {
		if m["cpu"] == "" || m["memory"] == "" {
			t.Errorf("container %s: resources %+v need cpu and memory requests and limits", c.Name, c.Resources)
		}
	}
}

// decodeYAMLString decodes one YAML document held in a string.
func decodeYAMLString(t *testing.T, doc string, v any) {
	t.Helper()
	if err := yaml.Unmarshal([]byte(doc), v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
}
