package neutron_test

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/neutron/neutrontest"
)

func TestHostPrefix(t *testing.T) {
	for in, want := range map[string]string{"10.0.0.5": "10.0.0.5/32", "10.0.0.5/24": "10.0.0.0/24", "fd00::1": "fd00::1/128",
		"::ffff:10.0.0.5": "10.0.0.5/32"} {
		if got, err := neutron.HostPrefix(in); err != nil || got != want {
			t.Errorf("HostPrefix(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := neutron.HostPrefix("pod-a"); err == nil {
		t.Error("HostPrefix accepted a name")
	}
}

func TestDiffAddresses(t *testing.T) {
	add, remove := neutron.DiffAddresses([]string{"a", "b", "b"}, []string{"b", "c"})
	if !reflect.DeepEqual(add, []string{"a"}) || !reflect.DeepEqual(remove, []string{"c"}) {
		t.Errorf("add %v remove %v", add, remove)
	}
}

// TestAddressGroups: create, add (idempotent), remove (refused whole when
// one is not there), find by name, delete (refused while a rule names it,
// then gone; gone again is no error).
func TestAddressGroups(t *testing.T) {
	f := neutrontest.New(t)
	c := neutron.New(f.Client(t))
	ctx := context.Background()
	ag, err := c.CreateAddressGroup(ctx, "kuryr-peer-k", "mine", "p", []string{"10.0.0.5"})
	if err != nil || !slices.Equal(ag.Addresses, []string{"10.0.0.5/32"}) {
		t.Fatalf("create: %+v, %v", ag, err)
	}
	if _, err := c.AddAddresses(ctx, ag.ID, []string{"10.0.0.5/32", "10.0.0.6/32"}); !neutron.AddressesMoved(err) {
		t.Fatalf("adding one that is there: %v, want 400 AddressesAlreadyExist", err)
	}
	if ag, err = c.AddAddresses(ctx, ag.ID, []string{"10.0.0.6/32"}); err != nil || len(ag.Addresses) != 2 {
		t.Fatalf("add: %+v, %v", ag, err)
	}
	if _, err := c.RemoveAddresses(ctx, ag.ID, []string{"10.0.0.6/32", "10.0.0.7/32"}); !neutron.IsNotFound(err) || !neutron.AddressesMoved(err) {
		t.Fatalf("removing one that is not there: %v, want 404", err)
	}
	if ag, err = c.RemoveAddresses(ctx, ag.ID, []string{"10.0.0.6/32"}); err != nil || !slices.Equal(ag.Addresses, []string{"10.0.0.5/32"}) {
		t.Fatalf("remove: %+v, %v", ag, err)
	}
	if found, err := c.AddressGroupsNamed(ctx, "kuryr-peer-k"); err != nil || len(found) != 1 || found[0].Description != "mine" {
		t.Fatalf("named: %+v, %v", found, err)
	}
	sg, err := c.CreateSecurityGroup(ctx, "np", "", "p", []string{"t"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateRule(ctx, sg.ID, "p", neutron.Rule{Direction: "ingress", EtherType: "IPv4", RemoteAddressGroup: ag.ID}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteAddressGroup(ctx, ag.ID); !neutron.InUse(err) {
		t.Fatalf("delete while a rule names it: %v, want 409", err)
	}
	if err := c.DeleteSecurityGroup(ctx, sg.ID); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.DeleteAddressGroup(ctx, ag.ID); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
}
