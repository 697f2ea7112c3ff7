// Package names is kuryr's whole vocabulary: every name kuryr gives to
// something outside its own memory (Neutron and Octavia tags, resource
// names, Kubernetes object names, interfaces, OVS external ids, nftables
// tables, component names) is spelled here and nowhere else, so that the
// controller, the daemon, the sweep, `kubectl kuryr`, the e2e framework and
// the benchmarks agree on them. `make test` fails when a "kuryr-..." literal
// appears in any other Go file.
//
// Tags identify every Neutron and Octavia resource kuryr creates, so that a
// restarted controller can find, adopt or delete them. A tag is
// "key=value"; Neutron forbids commas in tags, and the values used here
// (cluster names, UIDs, namespace and node names) cannot contain one.
package names

import "strings"

// The components, as they name themselves in logs, Events (the reporting
// controller), Kubernetes objects and the CNI configuration.
const (
	// Controller is the kuryr-controller: its Deployment, its container,
	// its ServiceAccount, its Lease and its Events' reporting controller.
	Controller = "kuryr-controller"
	// Daemon is the kuryr-daemon: its DaemonSet, its container and its
	// ServiceAccount.
	Daemon = "kuryr-daemon"
	// CNI is the kuryr-cni binary and its CNI plugin type.
	CNI = "kuryr-cni"
	// Bench is the benchmarks' binary, and the tag and label on what they
	// create.
	Bench = "kuryr-bench"
	// E2EApp is the app label of the e2e tests' workloads.
	E2EApp = "kuryr-e2e"
	// NamespaceFlag is kubectl kuryr's flag naming the namespace kuryr is
	// installed in.
	NamespaceFlag = "kuryr-namespace"
	// Check is what kubectl kuryr check names its probe pods' app, Service
	// and NetworkPolicy, and the prefix of its namespace.
	Check = "kuryr-check"
	// SupportBundle prefixes kubectl kuryr supportbundle's archive and its
	// top directory.
	SupportBundle = "kuryr-supportbundle"
)

// Kubernetes objects of an installation.
const (
	// ConfigMap holds kuryr.conf.
	ConfigMap = "kuryr-config"
	// Secret holds clouds.yaml (the OpenStack credentials).
	Secret = "kuryr-openstack"
	// Lease is the controller's leader election Lease.
	Lease = Controller
)

// Names on the nodes.
const (
	// NodePortInterface is the host interface of a node's management port.
	NodePortInterface = "kuryr-mgmt"
	// RefuseInterface is the host interface of a node's refuse port.
	RefuseInterface = "kuryr-refuse"
	// ProbeInterface is the host interface of the address-group probe port.
	ProbeInterface = "kuryr-probe"
	// MacvlanShim is a nested-macvlan VM node's own macvlan of its NIC,
	// through which the node reaches its pods (a NIC cannot reach its own
	// macvlans).
	MacvlanShim = "kuryr-mvl"
	// NodePortsTable is the nftables table (family inet) of the node ports.
	NodePortsTable = "kuryr-node-ports"
	// OVS external ids kuryr sets on a pod's interface beside iface-id.
	ExtContainerID = "kuryr-container-id"
	ExtIfName      = "kuryr-ifname"
	ExtPod         = "kuryr-pod"
)

// Neutron resource names.
const (
	// PoolPortName names a pooled port until a pod takes it.
	PoolPortName = "kuryr-pool-port"
	// NodePortPrefix prefixes a node's management port name (+ node name).
	NodePortPrefix = "kuryr-node-"
	// RefusePortPrefix prefixes a node's refuse port name (+ node name).
	RefusePortPrefix = "kuryr-refuse-"
	// OpenIngress and OpenEgress are the shared groups that open a
	// NetworkPolicy's ports to every source or destination.
	OpenIngress = "kuryr-open-ingress"
	OpenEgress  = "kuryr-open-egress"
	// OpenGroupPrefix is what the open groups' names start with.
	OpenGroupPrefix = "kuryr-open-"
	// PolicyGroupPrefix and PeerGroupPrefix prefix the names of a
	// NetworkPolicy's group and of a peer group.
	PolicyGroupPrefix = "kuryr-np-"
	PeerGroupPrefix   = "kuryr-peer-"
)

// Octavia resource names.
const (
	// AffinityProbePool names the pool that asks a provider what it does
	// with session persistence (a provider that takes it keeps it until
	// the load balancer's reconcile deletes it).
	AffinityProbePool = "kuryr-probe-session-persistence"
)

// NetworkName names a namespace's network and subnet.
func NetworkName(cluster, ns string) string { return "kuryr-" + cluster + "-ns-" + ns }

// NodeNetworkName names a node's pod network and subnet (pod_subnets_driver
// = node).
func NodeNetworkName(cluster, node string) string { return "kuryr-" + cluster + "-node-" + node }

// PolicyGroupName names a NetworkPolicy's security group.
func PolicyGroupName(policyUID string) string { return PolicyGroupPrefix + policyUID }

// PeerGroupName names a peer group (the ports of the pods a NetworkPolicy
// peer selects).
func PeerGroupName(key string) string { return PeerGroupPrefix + key }

// PeerAddressGroupDescription describes the address groups of a cluster's
// NetworkPolicy peers (named PeerGroupName): Neutron gives address groups
// no tags, so the description says whose they are.
func PeerAddressGroupDescription(cluster string) string {
	return "kuryr cluster " + cluster + ": the addresses of a NetworkPolicy peer's pods"
}

// AddressGroupProbeDescription describes the objects of a cluster's
// address-group probe.
func AddressGroupProbeDescription(cluster string) string {
	return "kuryr cluster " + cluster + ": address-group probe"
}

// SourceGroupName names the security group that admits a LoadBalancer
// Service's loadBalancerSourceRanges on its member pods' ports.
func SourceGroupName(serviceUID string) string { return "kuryr-lb-" + serviceUID }

// IsOpenGroup reports whether a security group name is one of the open
// groups.
func IsOpenGroup(name string) bool { return name == OpenIngress || name == OpenEgress }

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
	// ProbeTag marks what `kubectl kuryr doctor` creates to check the
	// credential's permissions, and deletes at once (a leftover is deleted
	// by the next doctor run).
	ProbeTag = "kuryr-doctor-probe"
	// AddressGroupProbeTag marks the port and security group of the
	// controller's address-group probe (package agprobe), deleted when it
	// has its answer and, left by a crash, at the next start.
	AddressGroupProbeTag = "kuryr-address-group-probe"
	// AddressGroupProbeName names the probe's port, security group and
	// address group.
	AddressGroupProbeName = "kuryr-address-group-probe"
	// AdoptedTag marks a pod's port adopted from the original kuryr
	// (kubectl kuryr migrate prepare) until migrate finish: while its pod's
	// groups are not ready, it keeps the groups it carries (they enforce
	// the original's policies) rather than failing closed.
	AdoptedTag = "kuryr-adopted"
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

// PoolSubportTag marks a pooled port made for a nested-vlan VM node's trunk
// (unbound; a subport once attached), as opposed to one bound to a
// hypervisor node: what kind a pooled port is never depends on fields a
// policy may hide (binding:host_id).
const PoolSubportTag = "kuryr-pool-subport"

// NodeTag marks a node's management port with the node's name.
func NodeTag(node string) string { return tagNode + node }

// RefuseTag marks a node's refuse port (on the service network) with the
// node's name.
func RefuseTag(node string) string { return tagRefuse + node }

// NodeNetworkTag marks a node's pod network and subnet (pod_subnets_driver
// = node) with the node's name. It is not NodeTag: that one marks the
// node's management port, which the sweep judges by other rules.
func NodeNetworkTag(node string) string { return tagNodeNet + node }

// ServiceTag marks a Service's load balancer, listeners, pools and floating
// IP with the Service's UID (Octavia tags follow the same vocabulary).
func ServiceTag(uid string) string { return tagService + uid }

// PolicyTag marks a NetworkPolicy's security group with the policy's UID.
func PolicyTag(uid string) string { return tagPolicy + uid }

// PeerTag marks a peer group (the pods a NetworkPolicy peer selects) with
// the peer's key.
func PeerTag(key string) string { return tagPeer + key }

// RefuseNodeOf returns the node a refuse port belongs to, or "".
func RefuseNodeOf(tags []string) string { return tagValue(tags, tagRefuse) }

// PolicyUIDOf returns the NetworkPolicy UID a security group was created
// for, or "".
func PolicyUIDOf(tags []string) string { return tagValue(tags, tagPolicy) }

// PeerKeyOf returns the peer key of a peer group, or "".
func PeerKeyOf(tags []string) string { return tagValue(tags, tagPeer) }

// ServiceUIDOf returns the Service UID a resource was created for, or "".
func ServiceUIDOf(tags []string) string { return tagValue(tags, tagService) }

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

// tagValue returns the value of the first tag that starts with prefix, or "".
func tagValue(tags []string, prefix string) string {
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, prefix); ok {
			return v
		}
	}
	return ""
}

// The original (Python) kuryr-kubernetes' names, which `kubectl kuryr
// migrate` looks for: its workloads as its manifests named them, and the
// finalizers it put on Pods, Services and NetworkPolicies (its
// NetworkPolicy finalizer is also what kuryr puts on KuryrNetworkPolicies).
const (
	// PythonController is the original's controller Deployment.
	PythonController = "kuryr-controller"
	// PythonDaemonSet is the original's kuryr-daemon DaemonSet.
	PythonDaemonSet = "kuryr-cni-ds"
	// PythonPodFinalizer, PythonServiceFinalizer and
	// PythonPolicyFinalizer are the finalizers the original put on Pods,
	// Services and NetworkPolicies; kuryr puts none there.
	PythonPodFinalizer     = "kuryr.openstack.org/pod-finalizer"
	PythonServiceFinalizer = "kuryr.openstack.org/service-finalizer"
	PythonPolicyFinalizer  = "kuryr.openstack.org/networkpolicy-finalizer"
	// MigrationConfigMap records, in kuryr's namespace, what `kubectl
	// kuryr migrate prepare` found of the original and adopted.
	MigrationConfigMap = "kuryr-migration"
	// MigrationBackupPrefix prefixes the file migrate prepare writes the
	// original's objects to.
	MigrationBackupPrefix = "kuryr-migration-backup"
)
