package neutron

import "strings"

// Tags identify every Neutron resource kuryr creates, so that a restarted
// controller can find, adopt or delete them. A tag is "key=value"; Neutron
// forbids commas in tags, and the values used here (cluster names, UIDs,
// namespace and node names) cannot contain one. This file is the whole
// vocabulary: no other file spells a tag out.
const (
	tagCluster   = "kuryr-cluster="
	tagPod       = "kuryr-pod="
	tagNamespace = "kuryr-namespace="
	tagPool      = "kuryr-pool="
	tagNode      = "kuryr-node="
	tagNodeNet   = "kuryr-node-net="
	tagService   = "kuryr-service="
	tagPolicy    = "kuryr-policy="
	tagPeer      = "kuryr-peer="
	tagRefuse    = "kuryr-refuse="
)

// ClusterTag marks everything that belongs to one Kubernetes cluster.
func ClusterTag(cluster string) string { return tagCluster + cluster }

// PodTag marks a pod's port with the pod's UID.
func PodTag(uid string) string { return tagPod + uid }

// NamespaceTag marks a namespace's network and subnet.
func NamespaceTag(ns string) string { return tagNamespace + ns }

// PoolTag marks a pooled port with the node it is bound to. A pooled port
// carries no pod tag: the KuryrPort that holds it records the ownership, so
// a port taken just before a crash, whose KuryrPort status was never
// written, simply returns to the pool at restart.
func PoolTag(node string) string { return tagPool + node }

// NodeTag marks a node's management port with the node's name.
func NodeTag(node string) string { return tagNode + node }

// RefuseTag marks a node's refuse port (on the service network) with the
// node's name.
func RefuseTag(node string) string { return tagRefuse + node }

// RefuseNodeOf returns the node a refuse port belongs to, or "".
func RefuseNodeOf(tags []string) string { return tagValue(tags, tagRefuse) }

// NodeNetworkTag marks a node's pod network and subnet (pod_subnets_driver
// = node) with the node's name. It is not NodeTag: that one marks the
// node's management port, which the sweep judges by other rules.
func NodeNetworkTag(node string) string { return tagNodeNet + node }

// ServiceTag marks a Service's load balancer, listeners, pools and floating
// IP with the Service's UID (Octavia tags follow the same vocabulary).
func ServiceTag(uid string) string { return tagService + uid }

// PolicyTag marks a NetworkPolicy's security group with the policy's UID.
func PolicyTag(uid string) string { return tagPolicy + uid }

// PolicyUIDOf returns the NetworkPolicy UID a security group was created
// for, or "".
func PolicyUIDOf(tags []string) string { return tagValue(tags, tagPolicy) }

// PeerTag marks a peer group (the pods a NetworkPolicy peer selects) with
// the peer's key.
func PeerTag(key string) string { return tagPeer + key }

// PeerKeyOf returns the peer key of a peer group, or "".
func PeerKeyOf(tags []string) string { return tagValue(tags, tagPeer) }

// ServiceUIDOf returns the Service UID a resource was created for, or "".
func ServiceUIDOf(tags []string) string { return tagValue(tags, tagService) }

// tagValue returns the value of the first tag that starts with prefix, or "".
func tagValue(tags []string, prefix string) string {
	for _, t := range tags {
		if strings.HasPrefix(t, prefix) {
			return strings.TrimPrefix(t, prefix)
		}
	}
	return ""
}

// PodUIDOf returns the pod UID a port was created for, or "".
func PodUIDOf(tags []string) string { return tagValue(tags, tagPod) }

// NamespaceOf returns the namespace a network was created for, or "".
func NamespaceOf(tags []string) string { return tagValue(tags, tagNamespace) }

// PoolNodeOf returns the node of a pooled port, or "".
func PoolNodeOf(tags []string) string { return tagValue(tags, tagPool) }

// NodeNetworkOf returns the node a pod network was created for, or "".
func NodeNetworkOf(tags []string) string { return tagValue(tags, tagNodeNet) }

// NodeOf returns the node a management port belongs to, or "".
func NodeOf(tags []string) string { return tagValue(tags, tagNode) }
