package migrate

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The original's objects (group openstack.org, version v1, no status
// subresource) as ../shared/reference describes them: KuryrPort
// status.vifs maps an interface to {default, vif} where vif is an os-vif
// object primitive ("versioned_object.data" holds its fields, id being the
// Neutron port); KuryrNetwork status {netId, subnetId, routerId};
// KuryrLoadBalancer status {loadbalancer, listeners, pools, members,
// service_pub_ip_info}; KuryrNetworkPolicy status.securityGroupId. Each is
// owned (ownerReferences) by its Pod, Service or NetworkPolicy.

// ovoData is the key of an os-vif object primitive's fields.
const ovoData = "versioned_object.data"

// Original is the original's objects, as listed.
type Original struct {
	Ports, Networks, LoadBalancers, Policies []unstructured.Unstructured
}

// Translate reads what the original recorded into a Record (cluster and
// tags are the caller's), and says what cannot be migrated. Pure.
func Translate(o Original) (Record, []string) {
	var rec Record
	var problems []string
	for _, kp := range o.Ports {
		p, why := portRecord(kp)
		for _, id := range vifPorts(kp) {
			if id != p.PortID || why != "" {
				rec.Kept = append(rec.Kept, id)
			}
		}
		switch {
		case why != "":
			problems = append(problems, fmt.Sprintf("KuryrPort %s/%s: %s", kp.GetNamespace(), kp.GetName(), why))
		case p.PortID != "":
			rec.Ports = append(rec.Ports, p)
		}
		if len(p.Extra) > 0 {
			problems = append(problems, fmt.Sprintf("pod %s/%s: interfaces other than eth0 (ports %v) are not migrated: "+
				"kuryr gives pods one interface; they stay until the pod goes, then remain in Neutron", p.Namespace, p.Name, p.Extra))
		}
	}
	for _, kn := range o.Networks {
		if n, ok := networkRecord(kn); ok {
			rec.Networks = append(rec.Networks, n)
		}
	}
	for _, klb := range o.LoadBalancers {
		s, why := serviceRecord(klb)
		if why != "" {
			problems = append(problems, fmt.Sprintf("KuryrLoadBalancer %s/%s: %s", klb.GetNamespace(), klb.GetName(), why))
			continue
		}
		if s.LoadBalancerID != "" {
			rec.Services = append(rec.Services, s)
		}
	}
	for _, knp := range o.Policies {
		if p, ok := policyRecord(knp); ok {
			rec.Policies = append(rec.Policies, p)
		}
	}
	return rec, problems
}

// owner is the UID of the object's controlling owner of kind.
func owner(u unstructured.Unstructured, kind string) string {
	for _, r := range u.GetOwnerReferences() {
		if r.Kind == kind {
			return string(r.UID)
		}
	}
	return ""
}

func portRecord(kp unstructured.Unstructured) (PortRecord, string) {
	uid, _, _ := unstructured.NestedString(kp.Object, "spec", "podUid")
	node, _, _ := unstructured.NestedString(kp.Object, "spec", "podNodeName")
	p := PortRecord{Ref: Ref{Namespace: kp.GetNamespace(), Name: kp.GetName(), UID: uid}, Node: node}
	if uid == "" {
		return p, "no spec.podUid"
	}
	vifs, _, _ := unstructured.NestedMap(kp.Object, "status", "vifs")
	ifnames := make([]string, 0, len(vifs))
	for ifname := range vifs {
		ifnames = append(ifnames, ifname)
	}
	sort.Strings(ifnames)
	for _, ifname := range ifnames {
		entry, _ := vifs[ifname].(map[string]any)
		id, _, _ := unstructured.NestedString(entry, "vif", ovoData, "id")
		kind, _, _ := unstructured.NestedString(entry, "vif", "versioned_object.name")
		def, _, _ := unstructured.NestedBool(entry, "default")
		switch {
		case id == "":
			return p, fmt.Sprintf("interface %s records no port id", ifname)
		case def || (ifname == "eth0" && p.PortID == ""):
			if kind == "VIFDPDKNested" {
				return p, "nested-dpdk (a NIC hot-plugged into the VM through Nova) is not supported by kuryr"
			}
			p.PortID = id
		default:
			p.Extra = append(p.Extra, id)
		}
	}
	return p, ""
}

// vifPorts are the ports of every interface a KuryrPort records.
func vifPorts(kp unstructured.Unstructured) []string {
	vifs, _, _ := unstructured.NestedMap(kp.Object, "status", "vifs")
	var out []string
	for _, v := range vifs {
		entry, _ := v.(map[string]any)
		if id, _, _ := unstructured.NestedString(entry, "vif", ovoData, "id"); id != "" {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

func networkRecord(kn unstructured.Unstructured) (NetworkRecord, bool) {
	ns, _, _ := unstructured.NestedString(kn.Object, "spec", "nsName")
	if ns == "" {
		ns = kn.GetName()
	}
	n := NetworkRecord{Namespace: ns}
	n.NetworkID, _, _ = unstructured.NestedString(kn.Object, "status", "netId")
	n.SubnetID, _, _ = unstructured.NestedString(kn.Object, "status", "subnetId")
	n.RouterID, _, _ = unstructured.NestedString(kn.Object, "status", "routerId")
	return n, n.NetworkID != "" && n.SubnetID != ""
}

func serviceRecord(klb unstructured.Unstructured) (ServiceRecord, string) {
	s := ServiceRecord{Ref: Ref{Namespace: klb.GetNamespace(), Name: klb.GetName(), UID: owner(klb, "Service")}}
	s.LoadBalancerID, _, _ = unstructured.NestedString(klb.Object, "status", "loadbalancer", "id")
	s.VIP, _, _ = unstructured.NestedString(klb.Object, "status", "loadbalancer", "ip")
	s.Provider, _, _ = unstructured.NestedString(klb.Object, "status", "loadbalancer", "provider")
	s.Listeners = ids(klb, "listeners")
	s.Pools = ids(klb, "pools")
	s.FloatingIPID, _, _ = unstructured.NestedString(klb.Object, "status", "service_pub_ip_info", "ip_id")
	s.FloatingIP, _, _ = unstructured.NestedString(klb.Object, "status", "service_pub_ip_info", "ip_addr")
	alloc, _, _ := unstructured.NestedString(klb.Object, "status", "service_pub_ip_info", "alloc_method")
	s.FloatingIPAllocated = alloc == "pool"
	if s.LoadBalancerID != "" && s.UID == "" {
		return s, "no ownerReference to its Service: whose load balancer it is cannot be known"
	}
	return s, ""
}

// ids are the ids of status.<field>[].
func ids(u unstructured.Unstructured, field string) []string {
	items, _, _ := unstructured.NestedSlice(u.Object, "status", field)
	var out []string
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			if id, _ := m["id"].(string); id != "" {
				out = append(out, id)
			}
		}
	}
	return out
}

func policyRecord(knp unstructured.Unstructured) (PolicyRecord, bool) {
	p := PolicyRecord{Ref: Ref{Namespace: knp.GetNamespace(), Name: knp.GetName(), UID: owner(knp, "NetworkPolicy")}}
	p.SecurityGroupID, _, _ = unstructured.NestedString(knp.Object, "status", "securityGroupId")
	return p, p.SecurityGroupID != ""
}
