package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/idp-proxy/idp-proxy/internal/suggest"
)

// envName is the environment variable of a flag: --base-url is
// SHORTENER_BASE_URL.
func envName(flag string) string {
	return envPrefix + "_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// settingFlags are the flags that are settings (not --help or --version),
// the ones an environment variable may set.
func settingFlags(fs *pflag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && f.Name != "version" {
			names = append(names, f.Name)
		}
	})
	return names
}

// checkEnv refuses the SHORTENER_ variables of environ (KEY=value
// entries) that name no flag, in any case: viper would ignore them, and
// SHORTENER_STOR=memory: would run on the bbolt file. Each is named, with
// the variable it probably meant.
func checkEnv(environ []string, fs *pflag.FlagSet) error {
	flags := settingFlags(fs)
	known := make(map[string]bool, len(flags))
	for _, f := range flags {
		known[envName(f)] = true
	}
	prefix := envPrefix + "_"
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if len(name) < len(prefix) || !strings.EqualFold(name[:len(prefix)], prefix) || known[name] {
			continue
		}
		suffix := strings.ReplaceAll(name[len(prefix):], "_", "-")
		if s := suggest.Closest(suffix, flags); s != "" {
			errs = append(errs, fmt.Errorf("shortener: unknown environment variable %s (did you mean %s?)", name, envName(s)))
		} else {
			errs = append(errs, fmt.Errorf("shortener: unknown environment variable %s: the variables are %s followed by a flag's name in upper case, \"-\" as \"_\" (%s for --store); see --help", name, prefix, envName("store")))
		}
	}
	return errors.Join(errs...)
}

// suggestFlag adds the flag a misspelt one probably meant to cobra's
// "unknown flag" error.
func suggestFlag(cmd *cobra.Command, err error) error {
	if nf, ok := errors.AsType[*pflag.NotExistError](err); ok && nf.GetSpecifiedName() != "" {
		if s := suggest.Closest(nf.GetSpecifiedName(), settingFlags(cmd.Flags())); s != "" {
			return fmt.Errorf("%w (did you mean --%s?)", err, s)
		}
	}
	return err
}
