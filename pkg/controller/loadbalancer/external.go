package loadbalancer

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// Floating IP allocation methods, as the original recorded them.
const (
	allocPool = "pool" // kuryr allocated it for the Service and releases it
	allocUser = "user" // it existed before; kuryr only associates it
)

// external gives the Service's VIP its floating IP (a LoadBalancer
// Service's, or the first of its externalIPs kuryr can serve), takes back
// what it no longer needs, says which external addresses are not served
// and why, and publishes a LoadBalancer Service's address in its
// status.loadBalancer.
func (r *Reconciler) external(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, lb *octavia.LoadBalancer, uid string) error {
	published := publishedIP(klb)
	fip, notServed, err := r.floatingIP(ctx, klb, lb, uid)
	if err != nil {
		return err
	}
	klb.Status.FloatingIP = fip
	r.reportNotServed(ctx, klb, notServed)
	var ingress []corev1.LoadBalancerIngress
	switch {
	case klb.Spec.Type != string(corev1.ServiceTypeLoadBalancer):
	case fip != nil:
		ingress = []corev1.LoadBalancerIngress{{IP: fip.IP, IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}}
	case internal(klb):
		// cloud-provider-openstack's internal load balancer: its VIP.
		ingress = []corev1.LoadBalancerIngress{{IP: klb.Spec.IP, IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}}
	}
	return r.publish(ctx, klb, uid, ingress, published)
}

// internal reports a LoadBalancer Service that asks for no floating IP.
func internal(klb *kuryrv1.KuryrLoadBalancer) bool {
	return klb.Spec.External != nil && klb.Spec.External.Internal
}

// publishedIP is the floating IP kuryr recorded, and so published.
func publishedIP(klb *kuryrv1.KuryrLoadBalancer) string {
	if f := klb.Status.FloatingIP; f != nil {
		return f.IP
	}
	return ""
}

// floatingIP makes the VIP carry the floating IP of the first candidate
// that can be served, and returns it with the candidates not served.
func (r *Reconciler) floatingIP(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, lb *octavia.LoadBalancer, uid string) (*kuryrv1.FloatingIPState, []string, error) {
	cands := candidates(klb.Spec, r.Settings)
	if len(cands) == 0 {
		return nil, nil, r.releaseFloatingIPs(ctx, klb, lb.VIPPortID, uid)
	}
	if lb.VIPPortID == "" {
		return nil, nil, fmt.Errorf("load balancer %s has no VIP port yet", lb.ID)
	}
	onVIP, err := r.Neutron.ListFloatingIPs(ctx, neutron.FloatingIPFilter{PortID: lb.VIPPortID})
	if err != nil {
		return nil, nil, err
	}
	if c := cands[0]; c.unknownClass != "" {
		// Nothing allocated or released until the class is known: the
		// Service's own floating IP on the VIP stays.
		st, why, err := r.keepOnVIP(ctx, klb, c, onVIP, uid, "kuryr.conf has no [LoadBalancerClass "+strconv.Quote(c.unknownClass)+"] section")
		if st != nil || err != nil {
			return st, nil, err
		}
		return nil, []string{c.label() + ": " + why}, nil
	}
	var notServed []string
	for i, c := range cands {
		// Nothing changes before c is known to be servable: the floating
		// IP the VIP carries stays until another can take its place.
		why, err := r.whyNot(ctx, klb, c, lb.VIPPortID)
		if err == nil && why == "" {
			var st *kuryrv1.FloatingIPState
			if st, why, err = r.serve(ctx, klb, c, onVIP, lb.VIPPortID, uid); err == nil && st != nil {
				return st, append(notServed, r.rest(ctx, klb, cands[i+1:], lb.VIPPortID, st.IP)...), nil
			}
		}
		if err != nil {
			return nil, nil, err
		}
		notServed = append(notServed, c.label()+": "+why)
	}
	return nil, notServed, r.dropAll(ctx, klb, onVIP, uid)
}

// rest are the reasons the candidates after the one served are not: each
// its own, else the one floating IP of the VIP. Reads only.
func (r *Reconciler) rest(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, cands []candidate, vipPort, served string) []string {
	var out []string
	for _, c := range cands {
		why, err := r.whyNot(ctx, klb, c, vipPort)
		switch {
		case err != nil:
			why = "not checked: " + err.Error()
		case why == "":
			why = "the VIP carries one floating IP (Neutron allows one per fixed IP, the ovn provider serves one per " +
				"load balancer), and it is " + served
		}
		out = append(out, c.label()+": "+why)
	}
	return out
}

// serve makes c, which whyNot found servable, the VIP's floating IP: the
// other floating IPs on the VIP are let go (Neutron allows one per fixed
// IP) only once c's exists. A refused allocation (nil and why) changes
// nothing.
func (r *Reconciler) serve(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, c candidate, onVIP []neutron.FloatingIP, vipPort, uid string) (*kuryrv1.FloatingIPState, string, error) {
	if c.addr == "" {
		resolved, why, err := r.resolve(ctx, c)
		if err != nil {
			return nil, "", err
		}
		if why != "" {
			return r.keepOnVIP(ctx, klb, c, onVIP, uid, why)
		}
		c = resolved
	}
	if i := slices.IndexFunc(onVIP, func(f neutron.FloatingIP) bool { return c.matches(f, uid) }); i >= 0 {
		if err := r.dropAll(ctx, klb, slices.Delete(slices.Clone(onVIP), i, i+1), uid); err != nil {
			return nil, "", err
		}
		return r.settle(ctx, c, onVIP[i], uid)
	}
	var f neutron.FloatingIP
	if c.addr != "" {
		found, err := r.Neutron.ListFloatingIPs(ctx, neutron.FloatingIPFilter{Address: c.addr})
		if err != nil {
			return nil, "", err
		}
		if len(found) > 0 {
			f = found[0]
		}
	}
	if f.ID == "" {
		allocated, why, err := r.allocate(ctx, klb, c, onVIP, vipPort, uid)
		if allocated == nil || err != nil {
			return nil, why, err
		}
		if f = *allocated; f.PortID == vipPort {
			return state(f, uid, false), "", nil
		}
	}
	if err := r.dropAll(ctx, klb, onVIP, uid); err != nil {
		return nil, "", err
	}
	if err := r.Neutron.AssociateFloatingIP(ctx, f.ID, vipPort); err != nil {
		return nil, "", err
	}
	return r.settle(ctx, c, f, uid)
}

// whyNot says, without changing anything, why c could not be served
// ("" when it could be, but for the one floating IP of the VIP).
func (r *Reconciler) whyNot(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, c candidate, vipPort string) (string, error) {
	if c.addr == "" {
		return "", nil // any address of the external network
	}
	found, err := r.Neutron.ListFloatingIPs(ctx, neutron.FloatingIPFilter{Address: c.addr})
	switch {
	case err != nil:
		return "", err
	case len(found) > 0 && found[0].PortID != "" && found[0].PortID != vipPort:
		return "in use by port " + found[0].PortID, nil
	case len(found) > 0:
		return "", nil
	case !c.allocate:
		return "not an allocated floating IP of project " + klb.Spec.ProjectID + ": allocate it in Neutron first", nil
	}
	_, why, err := r.externalSubnetOf(ctx, c.addr)
	return why, err
}

// settle records f as the VIP's floating IP. One the user named in
// loadBalancerIP is the user's from then on, even if kuryr allocated it
// once: it loses kuryr's tags and description, and is never deleted by
// kuryr.
func (r *Reconciler) settle(ctx context.Context, c candidate, f neutron.FloatingIP, uid string) (*kuryrv1.FloatingIPState, string, error) {
	if c.userOwned && names.ServiceUIDOf(f.Tags) != "" {
		kept := r.withoutOwnTags(f.Tags, uid)
		if err := r.Neutron.HandOverFloatingIP(ctx, f.ID, kept); err != nil {
			return nil, "", err
		}
		f.Tags, f.Description = kept, ""
	}
	return state(f, uid, c.userOwned), "", nil
}

// keepOnVIP: the subnet c names cannot be resolved (a typo, a subnet
// gone): the floating IP of c's network the VIP carries stays, with a
// Warning, rather than the Service losing its address; nil and why when
// there is none.
func (r *Reconciler) keepOnVIP(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, c candidate, onVIP []neutron.FloatingIP, uid, why string) (*kuryrv1.FloatingIPState, string, error) {
	i := slices.IndexFunc(onVIP, func(f neutron.FloatingIP) bool { return c.matches(f, uid) })
	if i < 0 {
		return nil, why, nil
	}
	r.event(ctx, klb, corev1.EventTypeWarning, "ExternalIPNotServed", "Associate",
		"floating IP %s kept: %s", onVIP[i].Address, why)
	return r.settle(ctx, c, onVIP[i], uid)
}

// withoutOwnTags are a floating IP's tags less those that make it kuryr's
// for the Service: what it keeps when handed over.
func (r *Reconciler) withoutOwnTags(tags []string, uid string) []string {
	return slices.DeleteFunc(slices.Clone(tags), func(t string) bool {
		return t == names.ServiceTag(uid) || t == names.ClusterTag(r.Settings.Cluster)
	})
}

// allocate returns a floating IP of the external network for the VIP:
// c's address, or any when c names none. One allocated by an earlier
// request (unanswered, or its association lost) is found by its
// description (tagged or not) first. A new one is made on the VIP when
// nothing else is on it, else unassociated (the caller moves it there
// once the other is let go). nil and why: Neutron refused it.
func (r *Reconciler) allocate(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, c candidate, onVIP []neutron.FloatingIP, vipPort, uid string) (*neutron.FloatingIP, string, error) {
	network, subnet := c.network, c.subnet // resolved by serve
	if c.addr != "" {
		network = r.Settings.ExternalNetwork
		var why string
		var err error
		if subnet, why, err = r.externalSubnetOf(ctx, c.addr); err != nil || why != "" {
			return nil, why, err
		}
	}
	mine, err := r.Neutron.ListFloatingIPs(ctx, neutron.FloatingIPFilter{Description: fipDescription(uid)})
	if err != nil {
		return nil, "", err
	}
	if i := slices.IndexFunc(mine, func(f neutron.FloatingIP) bool { return c.matches(f, uid) }); i >= 0 {
		return &mine[i], "", nil
	}
	// Others of the Service's, of a network or subnet it no longer asks for
	// (an unanswered create before the change), go; the VIP's stays until
	// its replacement is there.
	if err := r.dropAll(ctx, klb, slices.DeleteFunc(mine, func(f neutron.FloatingIP) bool { return f.PortID == vipPort }), uid); err != nil {
		return nil, "", err
	}
	port := vipPort
	if len(onVIP) > 0 {
		port = ""
	}
	f, err := r.Neutron.CreateFloatingIP(ctx, neutron.FloatingIPSpec{Network: network, Subnet: subnet,
		Port: port, Project: klb.Spec.ProjectID, Address: c.addr, Description: fipDescription(uid), Tags: r.tags(uid)})
	if why := refusedAllocation(c.addr, network, err); why != "" {
		return nil, why, nil
	}
	if c.addr == "" && (neutron.IsNotFound(err) || neutron.BadRequest(err)) {
		return nil, "Neutron refused a floating IP of network " + network + ": " + err.Error(), nil
	}
	if err != nil {
		return nil, "", err
	}
	r.event(ctx, klb, corev1.EventTypeNormal, "FloatingIPAllocated", "Allocate", "floating IP %s for the VIP %s", f.Address, klb.Spec.IP)
	return f, "", nil
}

// fipDescription marks the floating IPs kuryr allocates for a Service, so
// that one whose tagging failed is still known for that Service's. The
// original's were described "kuryr_lb": those are never taken for kuryr's.
func fipDescription(uid string) string { return "kuryr_lb " + uid }

// ours reports a floating IP kuryr allocated for this Service.
func ours(f neutron.FloatingIP, uid string) bool {
	return names.ServiceUIDOf(f.Tags) == uid || (len(f.Tags) == 0 && f.Description == fipDescription(uid))
}

func state(f neutron.FloatingIP, uid string, userOwned bool) *kuryrv1.FloatingIPState {
	m := allocUser
	if !userOwned && ours(f, uid) {
		m = allocPool
	}
	return &kuryrv1.FloatingIPState{ID: f.ID, IP: f.Address, AllocMethod: m}
}

// dropAll lets go of floating IPs: those kuryr allocated for this Service
// are released, the others disassociated.
func (r *Reconciler) dropAll(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, fips []neutron.FloatingIP, uid string) error {
	for _, f := range fips {
		if err := r.dropFloatingIP(ctx, klb, f, uid); err != nil && !neutron.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// dropFloatingIP releases a floating IP kuryr allocated for this Service
// and disassociates any other, and any the Service names in
// loadBalancerIP (until its hand-over is done, it may still look kuryr's).
func (r *Reconciler) dropFloatingIP(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, f neutron.FloatingIP, uid string) error {
	if ours(f, uid) && f.Address != klb.Spec.LoadBalancerIP {
		// Kept: the one the Service used (recorded, or associated), not a
		// stray of an unanswered create the user never saw.
		used := f.PortID != "" || (klb.Status.FloatingIP != nil && klb.Status.FloatingIP.ID == f.ID)
		if klb.Spec.External == nil || !klb.Spec.External.KeepFloatingIP || !used {
			return r.Neutron.DeleteFloatingIP(ctx, f.ID)
		}
		// keep-floatingip: the project's from now on, then let go.
		kept := slices.DeleteFunc(r.withoutOwnTags(f.Tags, uid), func(t string) bool { return slices.Contains(r.Settings.ExtraTags, t) })
		if err := r.Neutron.HandOverFloatingIP(ctx, f.ID, kept); err != nil {
			return err
		}
		r.event(ctx, klb, corev1.EventTypeNormal, "FloatingIPKept", "Release",
			"floating IP %s kept in the project (keep-floatingip): name it in loadBalancerIP to use it again", f.Address)
	}
	if err := r.Neutron.AssociateFloatingIP(ctx, f.ID, ""); err != nil && !neutron.IsNotFound(err) {
		return err
	}
	return nil
}

// releaseFloatingIPs lets go of every floating IP of the Service: those
// kuryr allocated (found by tag, recorded or not) are released, those on
// the VIP port (vipPort, if known) released if kuryr's, else disassociated.
func (r *Reconciler) releaseFloatingIPs(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, vipPort, uid string) error {
	found, err := r.Neutron.ListFloatingIPs(ctx, neutron.FloatingIPFilter{Tags: r.tags(uid)[:2]})
	if err != nil {
		return err
	}
	// Those whose tagging failed are known by their description.
	described, err := r.Neutron.ListFloatingIPs(ctx, neutron.FloatingIPFilter{Description: fipDescription(uid)})
	if err != nil {
		return err
	}
	found = append(found, described...)
	if vipPort != "" {
		onVIP, err := r.Neutron.ListFloatingIPs(ctx, neutron.FloatingIPFilter{PortID: vipPort})
		if err != nil {
			return err
		}
		found = append(found, onVIP...)
	}
	slices.SortFunc(found, func(a, b neutron.FloatingIP) int { return strings.Compare(a.ID, b.ID) })
	found = slices.CompactFunc(found, func(a, b neutron.FloatingIP) bool { return a.ID == b.ID })
	if err := r.dropAll(ctx, klb, found, uid); err != nil {
		return err
	}
	klb.Status.FloatingIP = nil
	return nil
}

// reportNotServed records the external addresses not served and warns
// the user when that changes.
func (r *Reconciler) reportNotServed(ctx context.Context, klb *kuryrv1.KuryrLoadBalancer, notServed []string) {
	if slices.Equal(notServed, klb.Status.ExternalIPsNotServed) {
		return
	}
	klb.Status.ExternalIPsNotServed = notServed
	if len(notServed) > 0 {
		r.event(ctx, klb, corev1.EventTypeWarning, "ExternalIPNotServed", "Associate", "%s", strings.Join(notServed, "; "))
	}
}
