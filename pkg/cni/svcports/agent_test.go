package svcports

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

type fakeTable struct {
	mu       sync.Mutex
	replaced []Ruleset
	fail     error
}

func (f *fakeTable) Replace(rs Ruleset) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.replaced = append(f.replaced, rs)
	return nil
}

func (f *fakeTable) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.replaced)
}

// testHealth listens on an ephemeral loopback port whatever port it is asked.
func testHealth() *HealthServers {
	return &HealthServers{Listen: func(uint16) (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }}
}

func newTestAgent(t *testing.T, objs ...client.Object) (*Agent, *fakeTable) {
	t.Helper()
	tbl := &fakeTable{}
	a := NewAgent(thisNode, fake.NewClientBuilder().WithObjects(objs...).Build(), tbl, testHealth())
	t.Cleanup(a.Health.Close)
	a.Forwarding = func(string) (string, error) { return "1\n", nil }
	return a, tbl
}

func TestAgentAppliesWhatChanged(t *testing.T) {
	svc := nodePortSvc()
	a, tbl := newTestAgent(t, &svc)
	ctx := context.Background()
	// Before the cache has synced, a restarted daemon touches nothing.
	if err := a.sync(ctx, true); err != nil || tbl.calls() != 0 {
		t.Fatalf("before the cache synced: %v, %d replaces", err, tbl.calls())
	}
	a.Synced()
	if err := a.sync(ctx, false); err != nil || tbl.calls() != 1 || len(tbl.replaced[0].Ports) != 1 {
		t.Fatalf("first apply: %v, %+v", err, tbl.replaced)
	}
	if err := a.sync(ctx, false); err != nil || tbl.calls() != 1 {
		t.Errorf("nothing changed: %v, %d replaces, want 1", err, tbl.calls())
	}
	if err := a.sync(ctx, true); err != nil || tbl.calls() != 2 {
		t.Errorf("resync: %v, %d replaces, want 2", err, tbl.calls())
	}
	tbl.fail = errors.New("netlink says no")
	if err := a.sync(ctx, true); err == nil || !a.Health.broken.Load() {
		t.Errorf("a failure was not reported: %v, health broken %v", err, a.Health.broken.Load())
	}
	tbl.fail = nil
	if err := a.sync(ctx, false); err != nil || tbl.calls() != 3 || a.Health.broken.Load() {
		t.Errorf("after a failure the table is replaced even without a change: %v, %d replaces", err, tbl.calls())
	}
}

func TestAgentLocalServiceAndHealthCheck(t *testing.T) {
	svc := nodePortSvc(loadBalancer, local, func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 32000 })
	es := epSlice("web", discoveryv1.AddressTypeIPv4, 8080, endpoint{ip: "10.10.0.6", node: thisNode, ready: yes})
	other := epSlice("other", discoveryv1.AddressTypeIPv4, 8080, endpoint{ip: "10.10.0.7", node: thisNode, ready: yes})
	other.Name = "other-x"
	a, tbl := newTestAgent(t, &svc, &es, &other)
	a.Synced()
	if err := a.sync(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if got := tbl.replaced[0].Ports; len(got) != 1 || !got[0].Local || len(got[0].Endpoints) != 1 || got[0].Endpoints[0].String() != "10.10.0.6:8080" {
		t.Errorf("ports %+v, want the local one to 10.10.0.6:8080", got)
	}
	if p := a.Health.Ports(); len(p) != 1 || p[0] != 32000 {
		t.Errorf("health check ports %v, want [32000]", p)
	}
}

func TestAgentSaysForwardingIsOff(t *testing.T) {
	svc := nodePortSvc()
	a, _ := newTestAgent(t, &svc)
	a.Forwarding = func(string) (string, error) { return "0\n", nil }
	var mu sync.Mutex
	var logs []string
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, args)
	}, funcr.Options{})))
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	a.Synced()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := strings.Count(strings.Join(logs, "\n"), "net.ipv4.ip_forward=1")
		mu.Unlock()
		if n >= 2 { // at start, and once the node ports are programmed
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(strings.Join(logs, "\n"), "net.ipv4.ip_forward=1"); n < 2 {
		t.Errorf("forwarding off was said %d times, want at start and on applying:\n%s", n, strings.Join(logs, "\n"))
	}
}
