package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

var clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$`)

// ValidateController checks what kuryr-controller needs; every message
// names the option to fix.
func (c *Config) ValidateController() error {
	var errs []error
	req := func(v, section, name, why string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("[%s] %s is required %s", section, name, why))
		}
	}
	if !clusterNameRE.MatchString(c.Kubernetes.ClusterName) {
		errs = append(errs, fmt.Errorf("[kubernetes] cluster_name %q: 1-40 letters, digits, '.', '_' or '-'", c.Kubernetes.ClusterName))
	}
	n := &c.Neutron
	switch n.AuthType {
	case "none", "noauth":
		req(n.EndpointOverride, "neutron", "endpoint_override", "with auth_type = none")
	case "password", "v3password":
		req(n.AuthURL, "neutron", "auth_url", "with auth_type = password")
		req(n.Username, "neutron", "username", "with auth_type = password")
		req(n.Password, "neutron", "password", "with auth_type = password")
		if n.ProjectID == "" && n.ProjectName == "" {
			errs = append(errs, errors.New("[neutron] project_id or project_name is required with auth_type = password"))
		}
	case "v3applicationcredential", "applicationcredential":
		req(n.AuthURL, "neutron", "auth_url", "with auth_type = v3applicationcredential")
		req(n.ApplicationCredentialID, "neutron", "application_credential_id", "with auth_type = v3applicationcredential")
		req(n.ApplicationCredentialSecret, "neutron", "application_credential_secret", "with auth_type = v3applicationcredential")
	case "":
		req(n.Cloud, "neutron", "cloud", "when auth_type is not set (credentials come from clouds.yaml)")
	}
	req(c.NeutronDefaults.Project, "neutron_defaults", "project", "(it owns the resources kuryr creates)")
	switch c.Kubernetes.PodSubnetsDriver {
	case SubnetDriverDefault:
		req(c.NeutronDefaults.PodSubnet, "neutron_defaults", "pod_subnet", "with pod_subnets_driver = default")
	case SubnetDriverNamespace, SubnetDriverNode:
		why := "with pod_subnets_driver = " + c.Kubernetes.PodSubnetsDriver
		req(c.NamespaceSubnet.PodRouter, "namespace_subnet", "pod_router", why)
		req(c.NamespaceSubnet.PodSubnetPool, "namespace_subnet", "pod_subnet_pool", why)
	}
	if c.Kubernetes.VIFPoolDriver == "neutron" && c.Kubernetes.PodSubnetsDriver == SubnetDriverNamespace {
		errs = append(errs, errors.New("[kubernetes] vif_pool_driver = neutron cannot be used with pod_subnets_driver = "+
			"namespace (a node's pool cannot know which namespace's network its next pod needs): use noop"))
	}
	errs = append(errs, c.validateNested()...)
	if c.Services() && c.Neutron.NoAuth() {
		req(c.Octavia.EndpointOverride, "octavia", "endpoint_override", "with auth_type = none when service_subnet is set")
	}
	return errors.Join(errs...)
}

// validateNested checks the options nested modes need and refuse.
func (c *Config) validateNested() []error {
	if !c.Nested() {
		return nil
	}
	var errs []error
	mode := "with pod_vif_driver = " + c.Kubernetes.PodVIFDriver
	if c.Kubernetes.VIFPoolDriver != "noop" && c.Kubernetes.PodVIFDriver != "nested-vlan" {
		errs = append(errs, fmt.Errorf("[kubernetes] vif_pool_driver = %s cannot be used %s: a pair on the VM's "+
			"port admits each pod's traffic, and a port has few (use noop, or nested-vlan for pools of subports)",
			c.Kubernetes.VIFPoolDriver, mode))
	}
	if c.Kubernetes.PodSubnetsDriver == SubnetDriverNode {
		errs = append(errs, fmt.Errorf("[kubernetes] pod_subnets_driver = node cannot be used %s "+
			"(a node's network is plugged into the node's own br-int)", mode))
	}
	if c.Kubernetes.RefuseUnserved && c.Services() {
		errs = append(errs, fmt.Errorf("[kubernetes] refuse_unserved_services = true cannot be used %s yet "+
			"(its port per node is plugged into the node's ovs_bridge): set it to false", mode))
	}
	if c.NeutronDefaults.NodeSubnet != "" {
		errs = append(errs, fmt.Errorf("[neutron_defaults] node_subnet must be empty %s: "+
			"VM nodes reach pods through their own port", mode))
	}
	return errs
}

// ValidateDaemon checks what kuryr-daemon needs.
func (c *Config) ValidateDaemon() error {
	var errs []error
	if c.CNIDaemon.NodeName == "" {
		errs = append(errs, errors.New("[cni_daemon] node_name is required (or $KUBERNETES_NODE_NAME, or a hostname)"))
	}
	if c.Nested() && c.CNIDaemon.WaitForUsable == "ovn-installed" {
		errs = append(errs, fmt.Errorf("[cni_daemon] wait_for_usable = ovn-installed cannot be used with pod_vif_driver = %s "+
			"(a VM node has no ovn-controller): use neutron-active", c.Kubernetes.PodVIFDriver))
	}
	if c.CNIDaemon.VIFAnnotationTimeout+c.CNIDaemon.ActiveTimeout > 210*time.Second {
		errs = append(errs, errors.New("[cni_daemon] vif_annotation_timeout + active_timeout must stay below 210 s: "+
			"the kubelet gives up on a CNI ADD after 4 minutes"))
	}
	return errors.Join(errs...)
}

// NoAuth reports whether OpenStack is reached without Keystone.
func (a *Auth) NoAuth() bool { return a.AuthType == "none" || a.AuthType == "noauth" }

// Describe renders the option table as a kuryr.conf with every option, its
// default and its help, for `--help-config` and the README.
func Describe() string {
	cfg := &Config{}
	opts := options(cfg)
	bySection := map[string][]*option{}
	var sections []string
	for _, o := range opts {
		if _, ok := bySection[o.section]; !ok {
			sections = append(sections, o.section)
		}
		bySection[o.section] = append(bySection[o.section], o)
	}
	var b strings.Builder
	for _, s := range sections {
		fmt.Fprintf(&b, "[%s]\n", s)
		for _, o := range bySection[s] {
			if o.help != "" {
				fmt.Fprintf(&b, "# %s\n", o.help)
			}
			fmt.Fprintf(&b, "#%s = %s\n", o.name, o.def)
		}
		b.WriteString("\n")
	}
	b.WriteString(classHelp)
	return b.String()
}

// classHelp documents the [LoadBalancerClass "name"] sections (lbclass.go).
const classHelp = `# Classes of cloud-provider-openstack's cloud.conf, copied as they are: a
# LoadBalancer Service annotated loadbalancer.openstack.org/class: NAME gets
# its floating IP where the class says, before its own annotations
# (network-id, subnet-id and member-subnet-id are not read: the VIP is the
# ClusterIP, the members are the pods). A Service naming a class not here
# gets a Warning and keeps the floating IP it has; none is allocated.
#[LoadBalancerClass "NAME"]
#floating-network-id = <external network id; empty: the annotation's, else external_svc_net>
#floating-subnet-id = <subnet id>
#floating-subnet = <a name, a glob, or ~ and a regular expression; ! negates>
#floating-subnet-tags = <tags: any of them; & all; ! not all; !& none>
`
