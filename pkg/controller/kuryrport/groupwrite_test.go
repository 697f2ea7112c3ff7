package kuryrport

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// lateEnv is a plugged pod whose groups come from src, on a Neutron that
// holds the next port update (the client gets 504) until the test has it
// done (Land), as an overloaded Neutron does a request its client gave up
// on.
func lateEnv(t *testing.T, base []string, groups []string) (*env, *switchable, string) {
	t.Helper()
	e := newEnv(t, kp("web", "uid-1"))
	src := &switchable{groups: groups}
	e.r.Groups, e.r.GroupPorts, e.r.Settings.SecurityGroups = src, e.r.Neutron.(*neutron.Client), base
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	vif, _ := e.get(t, "web").Status.DefaultVIF()
	return e, src, vif.PortID
}

// holdGroupWrite has the pod's groups changed to want, and Neutron hold
// that write.
func holdGroupWrite(t *testing.T, e *env, src *switchable, want ...string) {
	t.Helper()
	held := false
	e.fake.Late = func(method, coll string) bool {
		if method == "PUT" && coll == "ports" && !held {
			held = true
			return true
		}
		return false
	}
	src.groups = want
	if err := e.reconcile(t, "web"); err == nil || !held {
		t.Fatalf("the held write: %v, want its 504", err)
	}
}

func wantGroups(t *testing.T, e *env, port string, want ...string) {
	t.Helper()
	if got := portGroups(t, e, port); !slices.Equal(got, want) {
		t.Errorf("port groups %v, want %v", got, want)
	}
}

// A group write Neutron does late, after a later one, is refused (it was
// made at a revision the port has left): the port keeps the later groups.
func TestLateGroupWriteCannotUndoALaterOne(t *testing.T) {
	e, src, port := lateEnv(t, []string{"sg"}, []string{"sg-a"})
	holdGroupWrite(t, e, src, "sg-b")
	src.groups = []string{"sg-c"}
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	e.fake.Land()
	wantGroups(t, e, port, "sg", "sg-c")
	st := e.get(t, "web").Status
	if !slices.Equal(st.SecurityGroups, []string{"sg-c"}) || !st.SecurityGroupsApplied {
		t.Errorf("status %v applied %v", st.SecurityGroups, st.SecurityGroupsApplied)
	}
}

// When the groups wanted go back to those the port carried before the
// unanswered write, the port looks right but the write may still be done:
// the port is fenced (moved past the write's revision), and the late
// write is refused. Done before the port was read again, it is undone.
func TestLateGroupWriteIsFenced(t *testing.T) {
	for _, landedFirst := range []bool{false, true} {
		e, src, port := lateEnv(t, []string{"sg"}, []string{"sg-a"})
		holdGroupWrite(t, e, src, "sg-b")
		if landedFirst {
			e.fake.Land()
		}
		src.groups = []string{"sg-a"}
		if err := e.reconcile(t, "web"); err != nil {
			t.Fatal(err)
		}
		e.fake.Land()
		wantGroups(t, e, port, "sg", "sg-a")
		desc, _ := e.fake.Get("ports", port)["description"].(string)
		fenced := strings.HasPrefix(desc, "kuryr: moved past revision")
		if fenced == landedFirst {
			t.Errorf("landed first %v: fenced %v", landedFirst, fenced)
		}
		writes := e.fake.Writes()
		if err := e.reconcile(t, "web"); err != nil || e.fake.Writes() != writes {
			t.Errorf("landed first %v, settled: %v, %d writes", landedFirst, err, e.fake.Writes()-writes)
		}
	}
}

// Without base groups, kuryr keeps the groups a port carries that it did
// not add (the project's default): a group of an unanswered write, done
// late, is not taken for one of those.
func TestLateGroupWriteWithoutBaseGroups(t *testing.T) {
	e, src, port := lateEnv(t, nil, []string{"sg-a"})
	e.fake.Set("ports", port, "security_groups", []any{"default", "sg-a"})
	holdGroupWrite(t, e, src, "sg-b")
	e.fake.Land()
	wantGroups(t, e, port, "default", "sg-b")
	src.groups = []string{"sg-a"}
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	wantGroups(t, e, port, "default", "sg-a")
}

// A port released with an unanswered group write goes back to the pool
// only once moved past that write's revision (here, written back to the
// pool's groups): the late write, done after, is refused, and the next pod
// gets the pool's groups.
func TestReleasedPortWithALateGroupWrite(t *testing.T) {
	e := newEnv(t, kp("web", "uid-1"))
	src := &switchable{groups: []string{"sg-a"}}
	e.r.Groups, e.r.GroupPorts = src, e.r.Neutron.(*neutron.Client)
	e.r.Pool = filledPool(t, e, PoolSettings{Min: 1, Batch: 1}, "node-a", 1)
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	vif, _ := e.get(t, "web").Status.DefaultVIF()
	holdGroupWrite(t, e, src, "sg-b")
	if err := e.r.Delete(context.Background(), e.get(t, "web")); err != nil {
		t.Fatal(err)
	}
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	e.fake.Land()
	if e.r.Pool.FreeCount("node-a") != 1 {
		t.Fatalf("free ports %d, want the released one", e.r.Pool.FreeCount("node-a"))
	}
	wantGroups(t, e, vif.PortID, "sg")
	if _, marked := e.r.groupWrites.at(vif.PortID); marked {
		t.Error("the pooled port's unanswered write is still remembered")
	}
}

// A controller restarted while a write was unanswered does not know of it,
// but the KuryrPort's status says its last write was not seen through: the
// port is fenced all the same.
func TestLateGroupWriteAfterARestart(t *testing.T) {
	e, src, port := lateEnv(t, []string{"sg"}, []string{"sg-a"})
	holdGroupWrite(t, e, src, "sg-b")
	e.r.groupWrites = groupWrites{} // a new process
	src.groups = []string{"sg-a"}
	if err := e.reconcile(t, "web"); err != nil {
		t.Fatal(err)
	}
	e.fake.Land()
	wantGroups(t, e, port, "sg", "sg-a")
}

// A write refused because the port changed between reading and writing it
// (412) is made again at the new revision.
func TestGroupWriteRetriedAt412(t *testing.T) {
	e, src, port := lateEnv(t, []string{"sg"}, []string{"sg-a"})
	moved := false
	e.fake.Fail = func(method, coll string) (int, string) {
		if method == "PUT" && coll == "ports" && !moved {
			moved = true // OVN reports the port up meanwhile
			rev, _ := e.fake.Get("ports", port)["revision_number"].(int)
			e.fake.Set("ports", port, "revision_number", rev+1)
		}
		return 0, ""
	}
	src.groups = []string{"sg-b"}
	if err := e.reconcile(t, "web"); err != nil || !moved {
		t.Fatalf("%v (moved %v)", err, moved)
	}
	wantGroups(t, e, port, "sg", "sg-b")
	if n := e.fake.Requests["PUT ports"]; n != 2 {
		t.Errorf("%d port updates, want the refused one and its retry", n)
	}
}
