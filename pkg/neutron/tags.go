package neutron

import "strings"

// Tags identify every Neutron resource kuryr creates, so that a restarted
// controller can find, adopt or delete them. A tag is "key=value"; Neutron
// forbids commas in tags, and the values used here (cluster names, UIDs,
// namespace names) cannot contain one.
const (
	tagCluster   = "kuryr-cluster="
	tagPod       = "kuryr-pod="
	tagNamespace = "kuryr-namespace="
)

// ClusterTag marks everything that belongs to one Kubernetes cluster.
func ClusterTag(cluster string) string { return tagCluster + cluster }

// PodTag marks a pod's port with the pod's UID.
func PodTag(uid string) string { return tagPod + uid }

// NamespaceTag marks a namespace's network and subnet.
func NamespaceTag(ns string) string { return tagNamespace + ns }

// TagValue returns the value of the first tag with the prefix of key (one
// of the *Tag functions called with ""), or "".
func TagValue(tags []string, key string) string {
	for _, t := range tags {
		if strings.HasPrefix(t, key) {
			return strings.TrimPrefix(t, key)
		}
	}
	return ""
}

// PodUIDOf returns the pod UID a port was created for, or "".
func PodUIDOf(tags []string) string { return TagValue(tags, tagPod) }

// NamespaceOf returns the namespace a network was created for, or "".
func NamespaceOf(tags []string) string { return TagValue(tags, tagNamespace) }
