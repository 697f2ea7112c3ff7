package describe

import (
	"context"
	"fmt"
	"io"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
	"github.com/kuryr-k8s/kuryr/pkg/octavia"
)

// ServiceReport is a Service, its KuryrLoadBalancer and what Octavia has.
type ServiceReport struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Type      string   `json:"type"`
	ClusterIP string   `json:"clusterIP,omitempty"`
	Ports     []string `json:"ports,omitempty"`
	// KuryrLoadBalancer is nil if the Service has none.
	KuryrLoadBalancer      *KuryrLoadBalancerView `json:"kuryrLoadBalancer,omitempty"`
	KuryrLoadBalancerError string                 `json:"kuryrLoadBalancerError,omitempty"`
	LoadBalancer           *octavia.LoadBalancer  `json:"loadBalancer,omitempty"`
	Listeners              []octavia.Listener     `json:"listeners,omitempty"`
	Pools                  []PoolView             `json:"pools,omitempty"`
	FloatingIP             *neutron.FloatingIP    `json:"floatingIP,omitempty"`
	OpenStackError         string                 `json:"openStackError,omitempty"`
}

// KuryrLoadBalancerView is a KuryrLoadBalancer's spec and status.
type KuryrLoadBalancerView struct {
	Spec       kuryrv1.KuryrLoadBalancerSpec   `json:"spec"`
	Status     kuryrv1.KuryrLoadBalancerStatus `json:"status"`
	Conditions []Condition                     `json:"conditions,omitempty"`
}

// PoolView is a pool with its members.
type PoolView struct {
	octavia.Pool
	Members []octavia.Member `json:"members,omitempty"`
}

// Service collects a Service's report; only a missing Service is an error.
func Service(ctx context.Context, e *env.Env, name string) (*ServiceReport, error) {
	var svc corev1.Service
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: name}, &svc); err != nil {
		return nil, fmt.Errorf("service %s/%s: %w", e.Namespace, name, err)
	}
	r := &ServiceReport{Namespace: svc.Namespace, Name: svc.Name, Type: string(svc.Spec.Type), ClusterIP: svc.Spec.ClusterIP}
	for _, p := range svc.Spec.Ports {
		r.Ports = append(r.Ports, fmt.Sprintf("%d/%s -> %s", p.Port, p.Protocol, p.TargetPort.String()))
	}
	var klb kuryrv1.KuryrLoadBalancer
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: svc.Namespace, Name: svc.Name}, &klb); err != nil {
		r.KuryrLoadBalancerError = err.Error()
		return r, nil
	}
	r.KuryrLoadBalancer = &KuryrLoadBalancerView{Spec: klb.Spec, Status: klb.Status, Conditions: conditions(klb.Status.Conditions)}
	if klb.Status.LoadBalancer == nil || klb.Status.LoadBalancer.ID == "" {
		return r, nil
	}
	if err := r.octavia(ctx, e, klb.Status.LoadBalancer.ID); err != nil {
		r.OpenStackError = err.Error()
	}
	return r, nil
}

// octavia reads the load balancer, its listeners, pools and members, and
// the floating IP of its VIP port.
func (r *ServiceReport) octavia(ctx context.Context, e *env.Env, id string) error {
	cloud, err := e.Cloud(ctx)
	if err != nil {
		return err
	}
	if cloud.Octavia == nil {
		return fmt.Errorf("no Octavia: [neutron_defaults] service_subnet is not set or the catalog has no load-balancer")
	}
	if r.LoadBalancer, err = cloud.Octavia.GetLoadBalancer(ctx, id); err != nil || r.LoadBalancer == nil {
		if err == nil {
			err = fmt.Errorf("load balancer %s not found in Octavia", id)
		}
		return err
	}
	if r.Listeners, err = cloud.Octavia.Listeners(ctx, id); err != nil {
		return err
	}
	pools, err := cloud.Octavia.Pools(ctx, id)
	if err != nil {
		return err
	}
	for _, p := range pools {
		ms, err := cloud.Octavia.Members(ctx, p.ID)
		if err != nil {
			return err
		}
		r.Pools = append(r.Pools, PoolView{Pool: p, Members: ms})
	}
	if r.LoadBalancer.VIPPortID == "" {
		return nil
	}
	fips, err := cloud.Neutron.ListFloatingIPs(ctx, neutron.FloatingIPFilter{PortID: r.LoadBalancer.VIPPortID})
	if err != nil {
		return err
	}
	if len(fips) > 0 {
		r.FloatingIP = &fips[0]
	}
	return nil
}

func (r *ServiceReport) table(w io.Writer) error {
	_ = output.Section(w, "Service", "Name", r.Namespace+"/"+r.Name, "Type", r.Type, "Cluster IP", r.ClusterIP,
		"Ports", join(r.Ports))
	problem(w, "KuryrLoadBalancer", r.KuryrLoadBalancerError)
	if k := r.KuryrLoadBalancer; k != nil {
		lbID := ""
		if k.Status.LoadBalancer != nil {
			lbID = k.Status.LoadBalancer.ID
		}
		_ = output.Section(w, "KuryrLoadBalancer", "IP", k.Spec.IP, "Type", k.Spec.Type, "Provider", k.Spec.Provider,
			"Algorithm", k.Spec.Algorithm, "Subnet", k.Spec.SubnetID, "Load balancer", lbID,
			"Members", strconv.Itoa(k.Status.Members), "Security group", k.Status.SecurityGroup,
			"Session affinity", affinity(k))
		_ = output.Indented(w, "KuryrLoadBalancer conditions", conditionRows(k.Conditions))
	}
	problem(w, "OpenStack", r.OpenStackError)
	if lb := r.LoadBalancer; lb != nil {
		_ = output.Section(w, "Octavia load balancer", "ID", lb.ID, "Name", lb.Name, "VIP", lb.VIPAddress,
			"VIP port", lb.VIPPortID, "Provider", lb.Provider, "Provisioning", lb.ProvisioningStatus,
			"Operating", lb.OperatingStatus)
		_ = output.Indented(w, "Listeners", r.listenerRows())
		_ = output.Indented(w, "Pools", r.poolRows())
		_ = output.Indented(w, "Members", r.memberRows())
	}
	if f := r.FloatingIP; f != nil {
		_ = output.Section(w, "Floating IP", "ID", f.ID, "Address", f.Address, "Network", f.NetworkID)
	}
	return nil
}

func (r *ServiceReport) listenerRows() *output.Rows {
	t := output.NewRows("id", "protocol/port", "provisioning", "operating")
	for _, l := range r.Listeners {
		t.Add(l.ID, fmt.Sprintf("%s/%d", l.Protocol, l.Port), l.ProvisioningStatus, l.OperatingStatus)
	}
	return t
}

func (r *ServiceReport) poolRows() *output.Rows {
	t := output.NewRows("id", "protocol", "algorithm", "persistence", "provisioning", "operating")
	for _, p := range r.Pools {
		persistence := ""
		if p.AffinityTimeout > 0 {
			persistence = fmt.Sprintf("SOURCE_IP %ds", p.AffinityTimeout)
		}
		t.Add(p.ID, p.Protocol, p.Algorithm, persistence, p.ProvisioningStatus, p.OperatingStatus)
	}
	return t
}

// affinity is the ClientIP affinity asked for and whether it is in force.
func affinity(k *KuryrLoadBalancerView) string {
	if k.Spec.AffinityTimeoutSeconds == 0 {
		return ""
	}
	st := k.Status.SessionAffinity
	if st == "" {
		st = "not known yet"
	}
	return fmt.Sprintf("ClientIP %ds: %s", k.Spec.AffinityTimeoutSeconds, st)
}

func (r *ServiceReport) memberRows() *output.Rows {
	t := output.NewRows("pool", "address", "provisioning", "operating")
	for _, p := range r.Pools {
		for _, m := range p.Members {
			t.Add(p.ID, fmt.Sprintf("%s:%d", m.Address, m.Port), m.ProvisioningStatus, m.OperatingStatus)
		}
	}
	return t
}
