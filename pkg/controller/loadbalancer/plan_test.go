package loadbalancer

import (
	"reflect"
	"testing"

	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

func lspec(proto string, port int32, members ...octavia.MemberSpec) octavia.ListenerSpec {
	return octavia.ListenerSpec{Name: proto, Protocol: proto, Port: port,
		Pool: octavia.PoolSpec{Name: proto, Protocol: proto, Algorithm: "SOURCE_IP_PORT", Members: members}}
}

func affinity(l octavia.ListenerSpec, timeout int32) octavia.ListenerSpec {
	l.Pool.AffinityTimeout = timeout
	return l
}

func withAffinity(p octavia.Pool, timeout int32) octavia.Pool {
	p.AffinityTimeout = timeout
	return p
}

func m(ip string) octavia.MemberSpec { return octavia.MemberSpec{Address: ip, Port: 8080} }

func om(ip string) octavia.Member {
	return octavia.Member{Address: ip, Port: 8080, ProvisioningStatus: octavia.StatusActive}
}

func TestPlan(t *testing.T) {
	tcp := octavia.Listener{ID: "l-tcp", Protocol: "TCP", Port: 80, DefaultPoolID: "p-tcp", ProvisioningStatus: octavia.StatusActive}
	udp := octavia.Listener{ID: "l-udp", Protocol: "UDP", Port: 80, DefaultPoolID: "p-udp", ProvisioningStatus: octavia.StatusActive}
	ptcp := octavia.Pool{ID: "p-tcp", Algorithm: "SOURCE_IP_PORT", ListenerIDs: []string{"l-tcp"}, ProvisioningStatus: octavia.StatusActive}
	pudp := octavia.Pool{ID: "p-udp", Algorithm: "SOURCE_IP_PORT", ListenerIDs: []string{"l-udp"}, ProvisioningStatus: octavia.StatusActive}
	type s struct {
		kind stepKind
		id   string
	}
	for _, tc := range []struct {
		name string
		want []octavia.ListenerSpec
		obs  observed
		plan []s
	}{
		{"in sync: nothing", []octavia.ListenerSpec{lspec("TCP", 80, m("10.0.0.1"))},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{ptcp},
				members: map[string][]octavia.Member{"p-tcp": {om("10.0.0.1")}}}, nil},
		{"one member added: one member create", []octavia.ListenerSpec{lspec("TCP", 80, m("10.0.0.1"), m("10.0.0.2"))},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{ptcp},
				members: map[string][]octavia.Member{"p-tcp": {om("10.0.0.1")}}}, []s{{createMember, "p-tcp"}}},
		{"the only member gone: one member delete", []octavia.ListenerSpec{lspec("TCP", 80)},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{ptcp},
				members: map[string][]octavia.Member{"p-tcp": {om("10.0.0.1")}}}, []s{{deleteMember, "p-tcp"}}},
		{"the only member replaced: one batch, one lock of the load balancer", []octavia.ListenerSpec{lspec("TCP", 80, m("10.0.0.2"))},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{ptcp},
				members: map[string][]octavia.Member{"p-tcp": {om("10.0.0.1")}}}, []s{{setMembers, "p-tcp"}}},
		{"one of three replaced: member by member", []octavia.ListenerSpec{lspec("TCP", 80, m("10.0.0.1"), m("10.0.0.2"), m("10.0.0.4"))},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{ptcp},
				members: map[string][]octavia.Member{"p-tcp": {om("10.0.0.1"), om("10.0.0.2"), om("10.0.0.3")}}},
			[]s{{deleteMember, "p-tcp"}, {createMember, "p-tcp"}}},
		{"many members changed: one batch", []octavia.ListenerSpec{lspec("TCP", 80, m("10.0.0.4"), m("10.0.0.5"))},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{ptcp},
				members: map[string][]octavia.Member{"p-tcp": {om("10.0.0.1")}}}, []s{{setMembers, "p-tcp"}}},
		{"port removed: pool then listener", []octavia.ListenerSpec{lspec("TCP", 80)},
			observed{listeners: []octavia.Listener{tcp, udp}, pools: []octavia.Pool{ptcp, pudp}},
			[]s{{deletePool, "p-udp"}, {deleteListener, "l-udp"}}},
		{"port changed: remove old before creating new", []octavia.ListenerSpec{lspec("TCP", 8080)},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{ptcp}},
			[]s{{deletePool, "p-tcp"}, {deleteListener, "l-tcp"}, {createListener, ""}}},
		{"listener in ERROR replaced", []octavia.ListenerSpec{lspec("TCP", 80)},
			observed{listeners: []octavia.Listener{{ID: "l-tcp", Protocol: "TCP", Port: 80, DefaultPoolID: "p-tcp", ProvisioningStatus: octavia.StatusError}},
				pools: []octavia.Pool{ptcp}},
			[]s{{deletePool, "p-tcp"}, {deleteListener, "l-tcp"}, {createListener, ""}}},
		{"pool missing: created on the listener", []octavia.ListenerSpec{lspec("TCP", 80)},
			observed{listeners: []octavia.Listener{{ID: "l-tcp", Protocol: "TCP", Port: 80, ProvisioningStatus: octavia.StatusActive}}},
			[]s{{createPool, "l-tcp"}}},
		{"pool in ERROR replaced", []octavia.ListenerSpec{lspec("TCP", 80)},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{{ID: "p-tcp", Algorithm: "SOURCE_IP_PORT",
				ListenerIDs: []string{"l-tcp"}, ProvisioningStatus: octavia.StatusError}}},
			[]s{{deletePool, "p-tcp"}, {createPool, "l-tcp"}}},
		{"algorithm changed: pool replaced", []octavia.ListenerSpec{lspec("TCP", 80)},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{{ID: "p-tcp", Algorithm: "ROUND_ROBIN",
				ListenerIDs: []string{"l-tcp"}, ProvisioningStatus: octavia.StatusActive}}},
			[]s{{deletePool, "p-tcp"}, {createPool, "l-tcp"}}},
		{"orphan pool deleted", []octavia.ListenerSpec{lspec("TCP", 80)},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{ptcp, {ID: "p-x"}}},
			[]s{{deletePool, "p-x"}}},
		{"member in ERROR: replaced", []octavia.ListenerSpec{lspec("TCP", 80, m("10.0.0.1"))},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{ptcp},
				members: map[string][]octavia.Member{"p-tcp": {{Address: "10.0.0.1", Port: 8080, ProvisioningStatus: octavia.StatusError}}}},
			[]s{{deleteMember, "p-tcp"}, {createMember, "p-tcp"}}},
		{"new UDP port beside TCP", []octavia.ListenerSpec{lspec("TCP", 80), lspec("UDP", 80)},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{ptcp}}, []s{{createListener, ""}}},
		{"affinity asked: the pool updated, then its members", []octavia.ListenerSpec{affinity(lspec("TCP", 80, m("10.0.0.1")), 30)},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{ptcp}},
			[]s{{setAffinity, "p-tcp"}, {createMember, "p-tcp"}}},
		{"affinity timeout changed: the pool updated", []octavia.ListenerSpec{affinity(lspec("TCP", 80), 30)},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{withAffinity(ptcp, 60)}},
			[]s{{setAffinity, "p-tcp"}}},
		{"affinity in sync: nothing", []octavia.ListenerSpec{affinity(lspec("TCP", 80), 30)},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{withAffinity(ptcp, 30)}}, nil},
		{"affinity dropped: pool replaced (the provider keeps it otherwise)", []octavia.ListenerSpec{lspec("TCP", 80)},
			observed{listeners: []octavia.Listener{tcp}, pools: []octavia.Pool{withAffinity(ptcp, 30)}},
			[]s{{deletePool, "p-tcp"}, {createPool, "l-tcp"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []s
			for _, st := range plan(tc.want, tc.obs) {
				got = append(got, s{st.kind, st.id})
			}
			if !reflect.DeepEqual(got, tc.plan) {
				t.Fatalf("plan = %v, want %v", got, tc.plan)
			}
		})
	}
}
