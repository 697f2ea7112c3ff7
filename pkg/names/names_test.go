package names

import (
	"reflect"
	"testing"
)

// The spellings are a contract with what already exists in clouds and
// clusters (tags on resources of a running installation, the Lease, the
// ConfigMap): a change here orphans them. This test pins every one.
func TestSpellings(t *testing.T) {
	tags := []string{ClusterTag("c"), PodTag("u"), NamespaceTag("ns"), PoolTag("n1"), NodeTag("n2"),
		NodeNetworkTag("n3"), ServiceTag("s"), PolicyTag("p"), PeerTag("k"), RefuseTag("n4")}
	for _, c := range []struct{ got, want string }{
		{Controller, "kuryr-controller"}, {Daemon, "kuryr-daemon"}, {CNI, "kuryr-cni"},
		{Lease, "kuryr-controller"}, {ConfigMap, "kuryr-config"}, {Secret, "kuryr-openstack"},
		{NodePortInterface, "kuryr-mgmt"}, {RefuseInterface, "kuryr-refuse"}, {NodePortsTable, "kuryr-node-ports"},
		{ExtContainerID, "kuryr-container-id"}, {ExtIfName, "kuryr-ifname"}, {ExtPod, "kuryr-pod"},
		{PoolPortName, "kuryr-pool-port"}, {NodePortPrefix + "n", "kuryr-node-n"}, {RefusePortPrefix + "n", "kuryr-refuse-n"},
		{OpenIngress, "kuryr-open-ingress"}, {OpenEgress, "kuryr-open-egress"},
		{NetworkName("c1", "shop"), "kuryr-c1-ns-shop"}, {NodeNetworkName("c1", "w-1"), "kuryr-c1-node-w-1"},
		{PolicyGroupName("u1"), "kuryr-np-u1"}, {PeerGroupName("k1"), "kuryr-peer-k1"}, {SourceGroupName("u2"), "kuryr-lb-u2"},
		{tags[0], "kuryr-cluster=c"}, {tags[1], "kuryr-pod=u"}, {tags[2], "kuryr-namespace=ns"}, {tags[3], "kuryr-pool=n1"},
		{tags[4], "kuryr-node=n2"}, {tags[5], "kuryr-node-net=n3"}, {tags[6], "kuryr-service=s"},
		{tags[7], "kuryr-policy=p"}, {tags[8], "kuryr-peer=k"}, {tags[9], "kuryr-refuse=n4"},
		// Each reader finds its own tag among all the others, and only it.
		{PodUIDOf(tags), "u"}, {NamespaceOf(tags), "ns"}, {PoolNodeOf(tags), "n1"}, {NodeOf(tags), "n2"},
		{NodeNetworkOf(tags), "n3"}, {ServiceUIDOf(tags), "s"}, {PolicyUIDOf(tags), "p"}, {PeerKeyOf(tags), "k"},
		{RefuseNodeOf(tags), "n4"}, {NodeOf(tags[5:6]), ""}, {PodUIDOf(nil), ""},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if !IsOpenGroup(OpenEgress) || IsOpenGroup(PolicyGroupName("x")) {
		t.Error("IsOpenGroup")
	}
}

// TestTags moved here from pkg/neutron with the tags.
func TestTags(t *testing.T) {
	tags := []string{ClusterTag("c1"), PodTag("u1"), NamespaceTag("ns"),
		PoolTag("n1"), NodeTag("n2")}
	got := []string{PodUIDOf(tags), NamespaceOf(tags), PodUIDOf(nil),
		PoolNodeOf(tags), NodeOf(tags)}
	if want := []string{"u1", "ns", "", "n1", "n2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
