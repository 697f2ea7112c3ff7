package version

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestInfo(t *testing.T) {
	stamped := func(main string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: main}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	for _, tc := range []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   Info
	}{
		{"release build", "v1.2.3", stamped("(devel)", "vcs.revision", "abc123", "vcs.modified", "false"),
			Info{"v1.2.3", "abc123", "go1.99.1"}},
		{"developer's modified tree", "", stamped("(devel)", "vcs.revision", "abc123", "vcs.modified", "true"),
			Info{"devel", "abc123-dirty", "go1.99.1"}},
		{"go install at a tag", "", stamped("v0.4.0"), Info{"v0.4.0", "unknown", "go1.99.1"}},
		{"no VCS stamp", "", stamped("(devel)"), Info{"devel", "unknown", "go1.99.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := info(tc.linked, tc.bi); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := info("", nil); got.Version != "devel" || got.Revision != "unknown" || got.GoVersion == "" {
		t.Errorf("without build info: %+v", got)
	}
}

func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector(Info{"v1.2.3", "abc123", "go1.99.1"}))
	want := `# HELP kuryr_build_info Always 1; its labels say which build of kuryr is running.
# TYPE kuryr_build_info gauge
kuryr_build_info{goversion="go1.99.1",revision="abc123",version="v1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kuryr_build_info"); err != nil {
		t.Error(err)
	}
	if got := (Info{"v1.2.3", "abc123", "go1.99.1"}).String("kuryr-controller"); got != "kuryr-controller v1.2.3 (revision abc123, go1.99.1)" {
		t.Errorf("String: %q", got)
	}
}
