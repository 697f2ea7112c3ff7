package refuse

import (
	"context"
	"errors"
	"testing"
)

// fakeOVS records the OVS ports' removals and additions; failDel fails
// that many DelPortApplied first.
type fakeOVS struct {
	ops     []string
	failDel int
}

func (f *fakeOVS) EnsureSystemPort(_ context.Context, _, name, _, _ string) error {
	f.ops = append(f.ops, "add "+name)
	return nil
}

func (f *fakeOVS) DelPort(_ context.Context, name string) error {
	f.ops = append(f.ops, "del "+name)
	return nil
}

func (f *fakeOVS) DelPortApplied(_ context.Context, name string) error {
	if f.failDel > 0 {
		f.failDel--
		return errors.New("ovs-vswitchd did not answer")
	}
	f.ops = append(f.ops, "del-applied "+name)
	return nil
}

// fakeNS makes the device on the first Plug only.
type fakeNS struct{ made bool }

func (f *fakeNS) Plug(*Plan, bool) (bool, error) {
	created := !f.made
	f.made = true
	return created, nil
}

func (f *fakeNS) Unplug(string) error { f.made = false; return nil }

// A device made anew gets its OVS port removed (applied) and added again,
// even when the removal failed once and the retry finds the device made.
func TestAgentReaddsAfterAFailure(t *testing.T) {
	o := &fakeOVS{failDel: 1}
	a := NewAgent(RefusePort, o, &fakeNS{}, "br-int", false)
	p, err := NewPlan(refusePort("0.0.0.0/0", "10.96.255.254", "10.96.0.0/17"))
	if err != nil {
		t.Fatal(err)
	}
	a.set(p)
	if err := a.apply(context.Background()); err == nil {
		t.Fatal("the failed removal was not returned")
	}
	if err := a.apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := a.apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"del-applied kuryr-refuse", "add kuryr-refuse", "add kuryr-refuse"}
	if len(o.ops) != len(want) {
		t.Fatalf("OVS operations %v, want %v", o.ops, want)
	}
	for i := range want {
		if o.ops[i] != want[i] {
			t.Fatalf("OVS operations %v, want %v", o.ops, want)
		}
	}
}
