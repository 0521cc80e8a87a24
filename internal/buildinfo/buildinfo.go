// Package buildinfo reports the version of the running binary.
package buildinfo

import (
	"runtime/debug"
)

// Version is set at link time with -ldflags "-X ...buildinfo.Version=v1.2.3";
// when empty, the module version or VCS revision recorded by the Go toolchain
// is used.
var Version = ""

// String returns a one-line description of the build.
func String() string {
	v := Version
	info, ok := debug.ReadBuildInfo()
	if v == "" && ok {
		v = info.Main.Version
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	goVersion := "unknown"
	if ok {
		goVersion = info.GoVersion
	}
	return v + " " + goVersion
}
