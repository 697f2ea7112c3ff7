// Package version says which build of kuryr is running: every binary's
// --version, and the kuryr_build_info metric each component exports.
//
// The project's builds set both at link time (hack/ldflags.sh: -X
// …/pkg/version.revision=<commit> and, for a release, version=vX.Y.Z from
// KURYR_VERSION);
// otherwise they come from what the Go toolchain embeds (the module's
// version after go install …@vX.Y.Z, the VCS stamp). A build with neither
// says "devel" and "unknown", never nothing.
package version

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Set at link time (hack/ldflags.sh).
var (
	version  = ""
	revision = ""
)

// Info is one build's identity.
type Info struct {
	Version   string // vX.Y.Z, or "devel"
	Revision  string // the git commit, "-dirty" when built from a modified tree, or "unknown"
	GoVersion string
}

// Get returns this binary's Info.
func Get() Info {
	in := info(version, readBuildInfo())
	if revision != "" {
		in.Revision = revision
	}
	return in
}

func readBuildInfo() *debug.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return bi
}

// info assembles an Info from the link-time version and the build's
// metadata (nil when the binary has none). Pure.
func info(linked string, bi *debug.BuildInfo) Info {
	in := Info{Version: linked, Revision: "unknown", GoVersion: runtime.Version()}
	var dirty bool
	if bi != nil {
		in.GoVersion = bi.GoVersion
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version // go install …@vX.Y.Z
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if in.Version == "" {
		in.Version = "devel"
	}
	if dirty && in.Revision != "unknown" {
		in.Revision += "-dirty"
	}
	return in
}

// String is the line --version prints for the named component.
func (i Info) String(component string) string {
	return fmt.Sprintf("%s %s (revision %s, %s)", component, i.Version, i.Revision, i.GoVersion)
}

// Flag registers --version on fs: print String(component) and exit.
func Flag(fs *flag.FlagSet) *bool {
	return fs.Bool("version", false, "print the version and exit")
}

// MustRegister adds kuryr_build_info{version,revision,goversion} = 1 to
// reg.
func MustRegister(reg prometheus.Registerer) {
	reg.MustRegister(collector(Get()))
}

func collector(i Info) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "kuryr_build_info",
		Help: "Always 1; its labels say which build of kuryr is running.",
		ConstLabels: prometheus.Labels{
			"version": i.Version, "revision": i.Revision, "goversion": i.GoVersion,
		},
	}, func() float64 { return 1 })
}
