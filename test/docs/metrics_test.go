// Package docs checks that the documentation says what the code does.
package docs

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuryr-k8s/kuryr/pkg/cni/conntrack"
	"github.com/kuryr-k8s/kuryr/pkg/cni/daemon"
	"github.com/kuryr-k8s/kuryr/pkg/cni/nodeport"
	"github.com/kuryr-k8s/kuryr/pkg/cni/refuse"
	"github.com/kuryr-k8s/kuryr/pkg/cni/svcports"
	"github.com/kuryr-k8s/kuryr/pkg/controller/cleanup"
	"github.com/kuryr-k8s/kuryr/pkg/controller/kuryrport"
	"github.com/kuryr-k8s/kuryr/pkg/controller/quota"
	"github.com/kuryr-k8s/kuryr/pkg/openstack"
	"github.com/kuryr-k8s/kuryr/pkg/version"
)

// described records the collectors registered with it.
type described struct{ collectors []prometheus.Collector }

func (d *described) Register(c prometheus.Collector) error {
	d.collectors = append(d.collectors, c)
	return nil
}
func (d *described) MustRegister(cs ...prometheus.Collector) {
	d.collectors = append(d.collectors, cs...)
}
func (d *described) Unregister(prometheus.Collector) bool { return false }

var (
	descName   = regexp.MustCompile(`^Desc\{fqName: "([^"]+)"`)
	descLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}\}$`)
	descConst  = regexp.MustCompile(`constLabels: \{([^}]*)\}`)
	constName  = regexp.MustCompile(`([a-z_]+)="`)
	backticked = regexp.MustCompile("`([a-z_]+)`")
)

// kuryrMetrics are the metrics kuryr's own code exports (not the Go
// runtime's or controller-runtime's), name → labels (sorted).
func kuryrMetrics(t *testing.T) map[string][]string {
	r := &described{}
	for _, register := range []func(prometheus.Registerer){
		openstack.MustRegister, kuryrport.MustRegister, quota.MustRegister, version.MustRegister, cleanup.MustRegister, // the controller's
		daemon.MustRegister, nodeport.MustRegister, refuse.MustRegister, conntrack.MustRegister, svcports.MustRegister,
	} {
		register(r)
	}
	out := map[string][]string{}
	for _, c := range r.collectors {
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			s := d.String()
			name, labels := descName.FindStringSubmatch(s), descLabels.FindStringSubmatch(s)
			if name == nil || labels == nil {
				t.Fatalf("cannot read %s", s)
			}
			var ls []string
			if labels[1] != "" {
				ls = strings.Split(labels[1], ",")
			}
			for _, m := range constName.FindAllStringSubmatch(descConst.FindStringSubmatch(s)[1], -1) {
				ls = append(ls, m[1])
			}
			slices.Sort(ls)
			out[name[1]] = ls
		}
	}
	return out
}

// documented reads docs/operations.md's metrics table: each kuryr_ and
// openstack_ row's metrics and the label names it gives in backticks.
func documented(t *testing.T) map[string][]string {
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			continue
		}
		if first := strings.TrimSpace(cells[1]); !strings.HasPrefix(first, "`kuryr_") && !strings.HasPrefix(first, "`openstack_") {
			continue
		}
		var ls []string
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			ls = append(ls, m[1])
		}
		slices.Sort(ls)
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			out[m[1]] = ls
		}
	}
	return out
}

// TestMetricsTable: every metric kuryr exports is in docs/operations.md's
// table with the labels it has, and the table names no other.
func TestMetricsTable(t *testing.T) {
	code, docs := kuryrMetrics(t), documented(t)
	if len(docs) == 0 {
		t.Fatal("docs/operations.md has no kuryr_ or openstack_ rows")
	}
	for name, labels := range code {
		doc, ok := docs[name]
		switch {
		case !ok:
			t.Errorf("%s (labels %v) is not in docs/operations.md's metrics table", name, labels)
		case !slices.Equal(doc, labels):
			t.Errorf("%s: the docs give labels %v, the code has %v", name, doc, labels)
		}
	}
	for name := range docs {
		if _, ok := code[name]; !ok {
			t.Errorf("docs/operations.md lists %s, which no component exports", name)
		}
	}
}
