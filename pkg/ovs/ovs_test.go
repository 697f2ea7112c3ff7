package ovs

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"
)

// startOVSDB starts an ovsdb-server with its root row and bridge br-int (no
// ovs-vswitchd: callers use noWait) and returns a Client talking to it.
func startOVSDB(t *testing.T) (*Client, *ovsdbServer) {
	t.Helper()
	srv := newOVSDBServer(t)
	o := New("unix:"+srv.sock, true)
	t.Cleanup(o.Close)
	// The model has no Open_vSwitch.bridges: the root row is inserted raw.
	transact(t, o, ovsdb.Operation{Op: ovsdb.OperationInsert, Table: tBridge, UUIDName: "br",
		Row: ovsdb.Row{"name": "br-int"}},
		ovsdb.Operation{Op: ovsdb.OperationInsert, Table: tRoot,
			Row: ovsdb.Row{"bridges": ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "br"}}}}})
	return o, srv
}

func transact(t *testing.T, o *Client, ops ...ovsdb.Operation) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := o.session().transact(ctx, 5*time.Second, ops...); err != nil {
		t.Fatalf("transact: %v", err)
	}
}

// ops builds operations with the client's API, failing the test on error.
func ops(t *testing.T, o *Client, build func(client.Client) ([]ovsdb.Operation, error)) []ovsdb.Operation {
	t.Helper()
	res, err := build(o.session().cl)
	if err != nil {
		t.Fatalf("build operations: %v", err)
	}
	return res
}

// waitCache waits for the cache to hold ok.
func waitCache(t *testing.T, o *Client, ok func(context.Context, client.Client) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := o.session().waitFor(ctx, ok); err != nil {
		t.Fatalf("cache never got there: %v", err)
	}
}

// count is the number of rows of a table in the cache.
func count[T any](t *testing.T, o *Client) int {
	t.Helper()
	var rows []T
	if err := o.session().cl.List(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// cachedIface is the interface name as the cache holds it, if it does.
func cachedIface(t *testing.T, o *Client, name string) (*ovsIface, bool) {
	t.Helper()
	i, ok, err := findIface(context.Background(), o.session().cl, name)
	if err != nil {
		t.Fatal(err)
	}
	return i, ok
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
	if len(got) != 5 || !reflect.DeepEqual(got[0], Port{Name: "tap1", PortID: "port-1", MAC: "fa:16:3e:00:00:01",
		PodUID: "uid-1", ContainerID: "c1", IfName: "eth0", PodName: "ns/p1"}) {
		t.Fatalf("Ports: %+v", got)
	}
	if b, _, err := findBridge(ctx, o.session().cl, "br-int"); err != nil || len(b.Ports) != 5 {
		t.Errorf("br-int holds %d ports, want 5 (%v)", len(b.Ports), err)
	}
	if i, _ := cachedIface(t, o, "tap3"); i.ExternalIDs["iface-status"] != "active" || i.ExternalIDs["vm-uuid"] != "uid-3" {
		t.Errorf("tap3 external_ids: %v", i.ExternalIDs)
	}
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
	waitCache(t, o, func(context.Context, client.Client) (bool, error) {
		return count[ovsPort](t, o) == 0 && count[ovsIface](t, o) == 0, nil
	})
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
	transact(t, o, insertExternalID(t, o, "kuryr-np", "other", "x")...)
	if err := o.EnsureInternalPort(ctx, "br-int", "kuryr-np", "np-port-2", "fa:16:3e:aa:00:03"); err != nil {
		t.Fatal(err)
	}
	got := selectIface(t, o, "kuryr-np")
	typ, _ := got["type"].(string)
	mac, _ := got["mac"].(string)
	ext := map[any]any{}
	if m, ok := got["external_ids"].(ovsdb.OvsMap); ok {
		ext = m.GoMap
	}
	if typ != "internal" || mac != "fa:16:3e:aa:00:03" || ext["iface-id"] != "np-port-2" ||
		ext["attached-mac"] != mac || ext["iface-status"] != "active" || ext["other"] != "x" {
		t.Fatalf("kuryr-np: type %q mac %q external_ids %v", typ, mac, ext)
	}
	if n := count[ovsPort](t, o); n != 1 {
		t.Errorf("%d ports, want 1", n)
	}
	if ports, _ := o.Ports(ctx); len(ports) != 0 {
		t.Errorf("an internal port is no pod's: %+v", ports)
	}
}

// selectIface reads the columns the cache does not hold.
func selectIface(t *testing.T, o *Client, name string) ovsdb.Row {
	t.Helper()
	res, err := o.session().transact(context.Background(), time.Second, ovsdb.Operation{Op: ovsdb.OperationSelect,
		Table: tIface, Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: name}}})
	if err != nil || len(res) != 1 || len(res[0].Rows) != 1 {
		t.Fatalf("select %s: %+v, %v", name, res, err)
	}
	return res[0].Rows[0]
}

// insertExternalID sets external_ids:key=value on the interface name.
func insertExternalID(t *testing.T, o *Client, name, key, value string) []ovsdb.Operation {
	return ops(t, o, func(c client.Client) ([]ovsdb.Operation, error) {
		m := &ovsIface{Name: name}
		return c.Where(m).Mutate(m, model.Mutation{Field: &m.ExternalIDs, Mutator: ovsdb.MutateOperationInsert,
			Value: map[string]string{key: value}})
	})
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
	transact(t, o, insertExternalID(t, o, "tap1", "ovn-installed", "true")...)
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
	o := New("unix:"+filepath.Join(t.TempDir(), "none.sock"), true)
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
		if i, ok := cachedIface(t, o, "tap1"); !ok || i.ExternalIDs[names.ExtContainerID] != p.ContainerID {
			t.Fatalf("cache behind the reply: %+v", i)
		}
		if i%3 == 0 {
			if err := o.DelPort(ctx, "tap1"); err != nil {
				t.Fatal(err)
			}
			if _, ok := cachedIface(t, o, "tap1"); ok {
				t.Fatal("cache behind the reply of a delete")
			}
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
	o := New("unix:"+srv.sock, false)
	t.Cleanup(o.Close)
	ctx, stop := runVswitchd(fake)
	if err := o.AddPort(ctx, pod("1")); err != nil {
		t.Fatalf("AddPort with a vswitchd: %v", err)
	}
	if err := o.EnsureInternalPort(ctx, "br-int", "np", "p", "fa:16:3e:00:00:09"); err != nil {
		t.Fatalf("EnsureInternalPort with a vswitchd: %v", err)
	}
	stop()
	tctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := o.DelPort(tctx, "tap1"); err == nil || !strings.Contains(err.Error(), "wait for ovs-vswitchd") {
		t.Fatalf("DelPort without a vswitchd: %v", err)
	}
	if err := o.DelPort(context.Background(), "tap-absent"); err != nil {
		t.Fatalf("DelPort of an absent port changes nothing, waits for nothing: %v", err)
	}
}

// With noWait, DelPortApplied still waits for ovs-vswitchd (and times out
// without one); DelPort does not.
func TestDelPortAppliedWaits(t *testing.T) {
	fake, srv := startOVSDB(t)
	o := New("unix:"+srv.sock, true)
	t.Cleanup(o.Close)
	ctx, stop := runVswitchd(fake)
	for _, name := range []string{"a", "b"} {
		if err := o.EnsureSystemPort(ctx, "br-int", name, "p-"+name, "fa:16:3e:00:00:09"); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.DelPortApplied(ctx, "a"); err != nil {
		t.Fatalf("DelPortApplied with a vswitchd: %v", err)
	}
	stop()
	tctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := o.DelPortApplied(tctx, "b"); err == nil || !strings.Contains(err.Error(), "wait for ovs-vswitchd") {
		t.Fatalf("DelPortApplied without a vswitchd: %v, want it to wait", err)
	}
	if err := o.EnsureSystemPort(context.Background(), "br-int", "c", "p-c", "fa:16:3e:00:00:0a"); err != nil {
		t.Fatalf("EnsureSystemPort with noWait and no vswitchd: %v", err)
	}
}

// runVswitchd runs fakeVswitchd until stop, which returns once it has
// stopped.
func runVswitchd(fake *Client) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); fakeVswitchd(ctx, fake) }()
	return ctx, func() { cancel(); <-done }
}

func fakeVswitchd(ctx context.Context, o *Client) {
	s := o.session()
	for {
		var r *ovsRoot
		err := s.waitFor(ctx, func(ctx context.Context, c client.Client) (bool, error) {
			got, ok, err := root(ctx, c)
			r = got
			return ok && r.NextCfg != r.CurCfg, err
		})
		if err != nil {
			return
		}
		m := &ovsRoot{UUID: r.UUID, CurCfg: r.NextCfg}
		up, err := s.cl.Where(m).Update(m, &m.CurCfg)
		if err != nil {
			return
		}
		_, _ = s.transact(ctx, time.Second, up...)
	}
}
