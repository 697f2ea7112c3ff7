package plug

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/cni/plug/ovsdb"
)

// startOVSDB starts an ovsdb-server with its root row and bridge br-int (no
// ovs-vswitchd: callers use noWait) and returns an OVS talking to it.
func startOVSDB(t *testing.T) (*OVS, *ovsdbServer) {
	t.Helper()
	srv := newOVSDBServer(t)
	o := NewOVS("unix:"+srv.sock, true)
	t.Cleanup(o.Close)
	transact(t, o, ovsdb.Op{"op": "insert", "table": tBridge, "uuid-name": "br",
		"row": map[string]any{"name": "br-int"}},
		ovsdb.Op{"op": "insert", "table": tRoot,
			"row": map[string]any{"bridges": ovsdb.Set(ovsdb.NamedUUID("br"))}})
	return o, srv
}

func transact(t *testing.T, o *OVS, ops ...ovsdb.Op) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := o.ovsdb().Transact(ctx, 5*time.Second, ops...); err != nil {
		t.Fatalf("transact: %v", err)
	}
}

// waitCache waits for the cache's rows from the cache once it holds ok.
func waitCache(t *testing.T, o *OVS, ok func(ovsdb.Tables) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := o.ovsdb().Cache().WaitFor(ctx, ok); err != nil {
		t.Fatalf("cache never got there: %v", err)
	}
}

func pod(i string) Port {
	return Port{Bridge: "br-int", Name: "tap" + i, PortID: "port-" + i, MAC: "fa:16:3e:00:00:0" + i,
		PodUID: "uid-" + i, ContainerID: "c" + i, IfName: "eth0", PodName: "ns/p" + i}
}

func TestOVSAddPortsTogether(t *testing.T) {
	o, _ := startOVSDB(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = o.AddPort(ctx, pod(string(rune('1'+i)))) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("AddPort %d: %v", i, err)
		}
	}
	got, err := o.Ports(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0] != (Port{Name: "tap1", PortID: "port-1", MAC: "fa:16:3e:00:00:01",
		PodUID: "uid-1", ContainerID: "c1", IfName: "eth0", PodName: "ns/p1"}) {
		t.Fatalf("Ports: %+v", got)
	}
	o.ovsdb().Cache().View(func(tb ovsdb.Tables) {
		b, _ := findBridge(tb, "br-int")
		if len(b.Ports) != 5 {
			t.Errorf("br-int holds %d ports, want 5", len(b.Ports))
		}
		i, _ := findIface(tb, "tap3")
		if i.ExternalIDs["iface-status"] != "active" || i.ExternalIDs["vm-uuid"] != "uid-3" {
			t.Errorf("tap3 external_ids: %v", i.ExternalIDs)
		}
	})
}

func TestOVSAddPortReplacesAndDelPort(t *testing.T) {
	o, _ := startOVSDB(t)
	ctx := context.Background()
	p := pod("1")
	if err := o.AddPort(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.ContainerID = "c-again"
	if err := o.AddPort(ctx, p); err != nil {
		t.Fatalf("AddPort of an existing port: %v", err)
	}
	if got, _ := o.Ports(ctx); len(got) != 1 || got[0].ContainerID != "c-again" {
		t.Fatalf("Ports after re-add: %+v", got)
	}
	bad := pod("2")
	bad.Bridge = "br-none"
	if err := o.AddPort(ctx, bad); err == nil || !strings.Contains(err.Error(), "no bridge named br-none") {
		t.Fatalf("AddPort to a missing bridge: %v", err)
	}
	if err := o.DelPort(ctx, "tap1"); err != nil {
		t.Fatal(err)
	}
	if err := o.DelPort(ctx, "tap1"); err != nil {
		t.Fatalf("DelPort of an absent port: %v", err)
	}
	waitCache(t, o, func(tb ovsdb.Tables) bool { return len(tb[tPort]) == 0 && len(tb[tIface]) == 0 })
	if got, err := o.Ports(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Ports after DelPort: %+v, %v", got, err)
	}
}

func TestOVSEnsureInternalPort(t *testing.T) {
	o, _ := startOVSDB(t)
	ctx := context.Background()
	for _, mac := range []string{"fa:16:3e:aa:00:01", "fa:16:3e:aa:00:01", "fa:16:3e:aa:00:02"} {
		if err := o.EnsureInternalPort(ctx, "br-int", "kuryr-np", "np-port", mac); err != nil {
			t.Fatalf("EnsureInternalPort %s: %v", mac, err)
		}
	}
	// A key kuryr does not set survives an update in place.
	transact(t, o, ovsdb.Op{"op": "mutate", "table": tIface,
		"where":     ovsdb.Where(ovsdb.Cond("name", "==", "kuryr-np")),
		"mutations": []any{[]any{"external_ids", "insert", ovsdb.Map(map[string]string{"other": "x"})}}})
	if err := o.EnsureInternalPort(ctx, "br-int", "kuryr-np", "np-port-2", "fa:16:3e:aa:00:03"); err != nil {
		t.Fatal(err)
	}
	got := selectIface(t, o, "kuryr-np")
	var typ, mac string
	_ = json.Unmarshal(got["type"], &typ)
	mac = ovsdb.String(got["mac"])
	ext := ovsdb.StringMap(got["external_ids"])
	if typ != "internal" || mac != "fa:16:3e:aa:00:03" || ext["iface-id"] != "np-port-2" ||
		ext["attached-mac"] != mac || ext["iface-status"] != "active" || ext["other"] != "x" {
		t.Fatalf("kuryr-np: type %q mac %q external_ids %v", typ, mac, ext)
	}
	o.ovsdb().Cache().View(func(tb ovsdb.Tables) {
		if len(tb[tPort]) != 1 {
			t.Errorf("%d ports, want 1", len(tb[tPort]))
		}
	})
	if ports, _ := o.Ports(ctx); len(ports) != 0 {
		t.Errorf("an internal port is no pod's: %+v", ports)
	}
}

// selectIface reads the columns the cache does not hold.
func selectIface(t *testing.T, o *OVS, name string) map[string]json.RawMessage {
	t.Helper()
	res, err := o.ovsdb().Transact(context.Background(), time.Second, ovsdb.Op{"op": "select",
		"table": tIface, "where": ovsdb.Where(ovsdb.Cond("name", "==", name))})
	if err != nil || len(res) != 1 || len(res[0].Rows) != 1 {
		t.Fatalf("select %s: %+v, %v", name, res, err)
	}
	return res[0].Rows[0]
}

func TestOVSWaitInstalled(t *testing.T) {
	o, _ := startOVSDB(t)
	ctx := context.Background()
	if err := o.AddPort(ctx, pod("1")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := o.WaitInstalled(ctx, "tap1", 0); err == nil || time.Since(start) < time.Second {
		t.Fatalf("WaitInstalled of an uninstalled port: %v after %v", err, time.Since(start))
	}
	done := make(chan error, 1)
	go func() { done <- o.WaitInstalled(ctx, "tap1", 10*time.Second) }()
	time.Sleep(100 * time.Millisecond)
	transact(t, o, ovsdb.Op{"op": "mutate", "table": tIface,
		"where":     ovsdb.Where(ovsdb.Cond("name", "==", "tap1")),
		"mutations": []any{[]any{"external_ids", "insert", ovsdb.Map(map[string]string{"ovn-installed": "true"})}}})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitInstalled: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitInstalled missed ovn-installed")
	}
}

func TestOVSNoServer(t *testing.T) {
	o := NewOVS("unix:"+filepath.Join(t.TempDir(), "none.sock"), true)
	defer o.Close()
	if _, err := o.Ports(context.Background()); err == nil || !strings.Contains(err.Error(), "not connected") {
		t.Fatalf("Ports without a server: %v", err)
	}
}

// The cache holds what a transaction did once its call returns (the server
// sends the monitor's update before the transaction's reply): a port added
// again at once is replaced, not refused by the name index.
func TestOVSCacheFollowsOwnWrites(t *testing.T) {
	o, _ := startOVSDB(t)
	ctx := context.Background()
	for i := range 30 {
		p := pod("1")
		p.ContainerID = fmt.Sprint("c", i)
		if err := o.AddPort(ctx, p); err != nil {
			t.Fatalf("AddPort #%d: %v", i, err)
		}
		o.ovsdb().Cache().View(func(tb ovsdb.Tables) {
			if i, ok := findIface(tb, "tap1"); !ok || i.ExternalIDs[extContainer] != p.ContainerID {
				t.Fatalf("cache behind the reply: %+v", i)
			}
		})
		if i%3 == 0 {
			if err := o.DelPort(ctx, "tap1"); err != nil {
				t.Fatal(err)
			}
			o.ovsdb().Cache().View(func(tb ovsdb.Tables) {
				if _, ok := findIface(tb, "tap1"); ok {
					t.Fatal("cache behind the reply of a delete")
				}
			})
		}
	}
}

// A restarted ovsdb-server is reached again, and the cache filled anew.
func TestOVSReconnects(t *testing.T) {
	o, srv := startOVSDB(t)
	ctx := context.Background()
	if err := o.AddPort(ctx, pod("1")); err != nil {
		t.Fatal(err)
	}
	srv.restart(t)
	if err := o.AddPort(ctx, pod("2")); err != nil {
		t.Fatalf("AddPort after a restart: %v", err)
	}
	if got, err := o.Ports(ctx); err != nil || len(got) != 2 {
		t.Fatalf("Ports after a restart: %+v, %v", got, err)
	}
}

// Several ports go in one transaction; one the server refuses makes the
// others go alone, and only it fails.
func TestOVSBulkAndRetry(t *testing.T) {
	o, _ := startOVSDB(t)
	ctx := context.Background()
	if err := o.AddPort(ctx, pod("1")); err != nil {
		t.Fatal(err)
	}
	if _, err := o.addPorts(ctx, []Port{pod("1"), pod("2"), pod("3")}); err != nil {
		t.Fatalf("bulk add: %v", err)
	}
	bad := pod("9")
	bad.Bridge = "br-none"
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, p := range []Port{pod("4"), bad, pod("5"), pod("6")} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = o.AddPort(ctx, p) }()
	}
	wg.Wait()
	for i, err := range errs {
		if (err != nil) != (i == 1) {
			t.Errorf("port %d: %v", i, err)
		}
	}
	if got, err := o.Ports(ctx); err != nil || len(got) != 6 {
		t.Fatalf("Ports: %+v, %v", got, err)
	}
}

// Without noWait a change waits for ovs-vswitchd to apply it: here a fake
// that copies next_cfg to cur_cfg, then none (a timeout).
func TestOVSWaitsForVswitchd(t *testing.T) {
	fake, srv := startOVSDB(t)
	o := NewOVS("unix:"+srv.sock, false)
	t.Cleanup(o.Close)
	ctx, stop := context.WithCancel(context.Background())
	vswitchd := make(chan struct{})
	go func() { defer close(vswitchd); fakeVswitchd(ctx, fake) }()
	if err := o.AddPort(ctx, pod("1")); err != nil {
		t.Fatalf("AddPort with a vswitchd: %v", err)
	}
	if err := o.EnsureInternalPort(ctx, "br-int", "np", "p", "fa:16:3e:00:00:09"); err != nil {
		t.Fatalf("EnsureInternalPort with a vswitchd: %v", err)
	}
	stop()
	<-vswitchd
	tctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := o.DelPort(tctx, "tap1"); err == nil || !strings.Contains(err.Error(), "wait for ovs-vswitchd") {
		t.Fatalf("DelPort without a vswitchd: %v", err)
	}
	if err := o.DelPort(context.Background(), "tap-absent"); err != nil {
		t.Fatalf("DelPort of an absent port changes nothing, waits for nothing: %v", err)
	}
}

func fakeVswitchd(ctx context.Context, o *OVS) {
	c := o.ovsdb()
	for {
		var uuid string
		var next int64
		err := c.Cache().WaitFor(ctx, func(tb ovsdb.Tables) bool {
			for u, r := range tb[tRoot] {
				uuid, next = u, ovsdb.Int(r.Cols["next_cfg"])
				return next != ovsdb.Int(r.Cols["cur_cfg"])
			}
			return false
		})
		if err != nil {
			return
		}
		_, _ = c.Transact(ctx, time.Second, ovsdb.Op{"op": "update", "table": tRoot,
			"where": ovsdb.Where(ovsdb.Cond("_uuid", "==", ovsdb.UUID(uuid))),
			"row":   map[string]any{"cur_cfg": next}})
	}
}
