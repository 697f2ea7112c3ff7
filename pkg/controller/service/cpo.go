package service

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// cloud-provider-openstack's annotations on a LoadBalancer Service that
// mean the same with kuryr, where the members are the pods and the VIP is
// the ClusterIP (docs/services.md).
const (
	cpoPrefix          = "loadbalancer.openstack.org/"
	cpoInternal        = "service.beta.kubernetes.io/openstack-internal-load-balancer"
	cpoFloatingNetwork = cpoPrefix + "floating-network-id"
	cpoFloatingSubnet  = cpoPrefix + "floating-subnet"
	cpoFloatingSubnet2 = cpoPrefix + "floating-subnet-id"
	cpoFloatingTags    = cpoPrefix + "floating-subnet-tags"
	cpoKeepFloatingIP  = cpoPrefix + "keep-floatingip"
	cpoClass           = cpoPrefix + "class"
)

// cpoRead are the annotations kuryr reads.
var cpoRead = []string{cpoInternal, cpoFloatingNetwork, cpoFloatingSubnet, cpoFloatingSubnet2, cpoFloatingTags, cpoKeepFloatingIP, cpoClass}

// cpoNotRead says why each other annotation of cloud-provider-openstack is
// not read; those not named here get a general reason.
var cpoNotRead = map[string]string{
	cpoPrefix + "timeout-client-data":    "the ovn provider has no listener timeouts",
	cpoPrefix + "timeout-member-connect": "the ovn provider has no listener timeouts",
	cpoPrefix + "timeout-member-data":    "the ovn provider has no listener timeouts",
	cpoPrefix + "timeout-tcp-inspect":    "the ovn provider has no listener timeouts",
	cpoPrefix + "load-balancer-id": "cloud-provider-openstack's record of its load balancer, stale now (kuryr's has the " +
		"ClusterIP as its VIP): remove it",
	cpoPrefix + "load-balancer-address": "cloud-provider-openstack's record of its address, stale now: remove it",
	cpoPrefix + "port-id":               "the VIP is the ClusterIP on the service subnet",
	cpoPrefix + "network-id":            "the VIP is the ClusterIP on the service subnet",
	cpoPrefix + "subnet-id":             "the VIP is the ClusterIP on the service subnet",
	cpoPrefix + "member-subnet-id":      "the members are the pods, on their own subnets",
}

// externalSpec is what a LoadBalancer Service's annotations of
// cloud-provider-openstack, and the class one names, ask of its external
// address (nil: nothing), and what is wrong with them. Pure.
func externalSpec(a map[string]string, classes map[string]config.LoadBalancerClass) (*kuryrv1.ExternalSpec, []string) {
	var ext kuryrv1.ExternalSpec
	var problems []string
	flag := func(key string, to *bool) {
		v, ok := a[key]
		if !ok {
			return
		}
		// As cloud-provider-openstack reads it: anything else is false.
		if v != "true" && v != "false" {
			problems = append(problems, key+": "+strconv.Quote(v)+" is not true or false (taken as false, as "+
				"cloud-provider-openstack does)")
		}
		*to = v == "true"
	}
	flag(cpoInternal, &ext.Internal)
	flag(cpoKeepFloatingIP, &ext.KeepFloatingIP)
	ext.FloatingNetworkID = strings.TrimSpace(a[cpoFloatingNetwork])
	ext.FloatingSubnetID = strings.TrimSpace(a[cpoFloatingSubnet2])
	ext.FloatingSubnet = strings.TrimSpace(a[cpoFloatingSubnet])
	ext.FloatingSubnetTags = strings.TrimSpace(a[cpoFloatingTags])
	problems = append(problems, applyClass(&ext, strings.TrimSpace(a[cpoClass]), classes)...)
	if ext.FloatingSubnetID != "" {
		for key, v := range map[string]*string{cpoFloatingSubnet: &ext.FloatingSubnet, cpoFloatingTags: &ext.FloatingSubnetTags} {
			if *v != "" {
				problems = append(problems, key+" is ignored: "+cpoFloatingSubnet2+" names the subnet")
				*v = ""
			}
		}
	}
	if _, err := neutron.SubnetMatch(ext.FloatingSubnet, ext.FloatingSubnetTags); err != nil {
		problems = append(problems, cpoFloatingSubnet+": "+err.Error()+" (no subnet matches it)")
	}
	if ext.Internal && choosesFloating(&ext) {
		problems = append(problems, "the floating network and subnet are ignored: "+cpoInternal+" asks for no floating IP")
		ext.FloatingNetworkID, ext.FloatingSubnetID, ext.FloatingSubnet, ext.FloatingSubnetTags = "", "", "", ""
	}
	if ext == (kuryrv1.ExternalSpec{}) {
		return nil, problems
	}
	return &ext, problems
}

// applyClass puts what the class (of kuryr.conf) named by
// loadbalancer.openstack.org/class chooses in place of the annotations, as
// cloud-provider-openstack does: its floating network, else the
// annotation's; its floating subnet (by id, or by pattern and tags), else
// the annotations'. A class kuryr.conf does not have is recorded, so that
// nothing is allocated or released until it has it. It says what the
// class overrides.
func applyClass(ext *kuryrv1.ExternalSpec, name string, classes map[string]config.LoadBalancerClass) []string {
	if name == "" {
		return nil
	}
	if ext.Internal {
		return []string{cpoClass + " is ignored: " + cpoInternal + " asks for no floating IP"}
	}
	c, ok := classes[name]
	if !ok {
		ext.UnknownClass = name
		ext.FloatingNetworkID, ext.FloatingSubnetID, ext.FloatingSubnet, ext.FloatingSubnetTags = "", "", "", ""
		return nil // said by unknownClass, which knows loadBalancerIP
	}
	var problems []string
	override := func(key, value string) {
		if value != "" {
			problems = append(problems, key+" is ignored: class "+strconv.Quote(name)+" chooses it")
		}
	}
	if c.FloatingNetworkID != "" {
		override(cpoFloatingNetwork, ext.FloatingNetworkID)
		ext.FloatingNetworkID = c.FloatingNetworkID
	}
	if c.SubnetChosen() {
		override(cpoFloatingSubnet2, ext.FloatingSubnetID)
		override(cpoFloatingSubnet, ext.FloatingSubnet)
		override(cpoFloatingTags, ext.FloatingSubnetTags)
		ext.FloatingSubnetID, ext.FloatingSubnet, ext.FloatingSubnetTags = c.FloatingSubnetID, c.FloatingSubnet, c.FloatingSubnetTags
	}
	return problems
}

// CheckClasses says which class of kuryr.conf has a floating-subnet
// pattern that does not compile (an error at start, naming the section,
// rather than a Warning on every Service of the class).
func CheckClasses(classes map[string]config.LoadBalancerClass) error {
	var errs []error
	for name, c := range classes {
		if _, err := neutron.SubnetMatch(c.FloatingSubnet, c.FloatingSubnetTags); err != nil {
			errs = append(errs, fmt.Errorf("[LoadBalancerClass %q] floating-subnet: %w", name, err))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// cpoWarnings say which of cloud-provider-openstack's annotations a
// Service carries that kuryr does not read, and why, and what is wrong
// with those it reads (read only on a LoadBalancer Service kuryr serves
// the external side of). Sorted. Pure.
func cpoWarnings(svc *corev1.Service, s Settings) []string {
	var w []string
	served := svc.Spec.Type == corev1.ServiceTypeLoadBalancer && !foreignClass(svc, s.Class)
	var ignored []string
	for k := range svc.Annotations {
		if !strings.HasPrefix(k, cpoPrefix) && k != cpoInternal {
			continue
		}
		why, named := cpoNotRead[k]
		if strings.HasPrefix(k, cpoPrefix+"timeout-") && s.Provider != "ovn" {
			why = "kuryr sets no listener timeouts: the " + s.Provider + " provider's defaults apply"
		}
		switch {
		case slices.Contains(cpoRead, k) && !served && k != cpoKeepFloatingIP:
			ignored = append(ignored, k)
		case named:
			w = append(w, "cloud-provider-openstack's annotation "+k+" is not read: "+why)
		case !slices.Contains(cpoRead, k):
			w = append(w, "cloud-provider-openstack's annotation "+k+" is not read by kuryr")
		}
	}
	if len(ignored) > 0 {
		slices.Sort(ignored)
		w = append(w, "cloud-provider-openstack's annotations "+strings.Join(ignored, ", ")+
			" are read on a LoadBalancer Service whose external side kuryr serves only")
	}
	if served {
		ext, problems := externalSpec(svc.Annotations, s.Classes)
		w = append(w, problems...)
		if ext != nil && ext.UnknownClass != "" {
			w = append(w, unknownClass(ext.UnknownClass, svc.Spec.LoadBalancerIP))
		}
		switch {
		case ext == nil || svc.Spec.LoadBalancerIP == "":
		case ext.Internal:
			w = append(w, "loadBalancerIP "+svc.Spec.LoadBalancerIP+" is not served: "+cpoInternal+
				" asks for no floating IP, and the VIP is the ClusterIP")
		case choosesFloating(ext):
			w = append(w, "the floating network and subnet annotations are not used: loadBalancerIP "+
				svc.Spec.LoadBalancerIP+" names the floating IP")
		}
	}
	slices.Sort(w)
	return w
}

// unknownClass says what a class kuryr.conf does not have means for the
// Service's floating IP.
func unknownClass(name, lbIP string) string {
	w := cpoClass + " " + strconv.Quote(name) + ": kuryr.conf has no [LoadBalancerClass " + strconv.Quote(name) + "] section"
	if lbIP != "" {
		return w + "; not needed: loadBalancerIP " + lbIP + " names the floating IP"
	}
	return w + "; no floating IP is allocated or released until it has (the load balancer itself is kept up to date)"
}

// ownExternal reports annotations that give a LoadBalancer Service its
// external side without external_svc_net: a floating network (its own or
// its class's), none, or a class kuryr.conf does not have.
func ownExternal(a map[string]string, classes map[string]config.LoadBalancerClass) bool {
	ext, _ := externalSpec(a, classes)
	return ext != nil && (ext.Internal || ext.FloatingNetworkID != "" || ext.UnknownClass != "")
}

// choosesFloating: ext names the floating network or subnet.
func choosesFloating(ext *kuryrv1.ExternalSpec) bool {
	return ext.FloatingNetworkID != "" || ext.FloatingSubnetID != "" || ext.FloatingSubnet != "" || ext.FloatingSubnetTags != ""
}
