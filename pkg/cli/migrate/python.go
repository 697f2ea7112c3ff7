package migrate

import (
	"fmt"
	"strings"

	"gopkg.in/ini.v1"

	"github.com/kuryr-k8s/kuryr/pkg/config"
)

// pythonConf is what migrate reads of the original's kuryr.conf: how to
// tell its objects, and what kuryr's own configuration must agree with for
// them to be adopted rather than replaced.
type pythonConf struct {
	Tags          []string // [neutron_defaults] resource_tags
	Project       string   // [neutron_defaults] project
	PodSubnet     string   // [neutron_defaults] pod_subnet
	ServiceSubnet string   // [neutron_defaults] service_subnet
	SubnetsDriver string   // [kubernetes] pod_subnets_driver
	VIFDriver     string   // [kubernetes] pod_vif_driver
	Router        string   // [namespace_subnet] pod_router
	SubnetPool    string   // [namespace_subnet] pod_subnet_pool
	Provider      string   // [kubernetes] endpoints_driver_octavia_provider
	ExternalNet   string   // [neutron_defaults] external_svc_net
	Algorithm     string   // [octavia_defaults] lb_algorithm
}

// parsePythonConf reads the original's kuryr.conf (oslo.config: INI,
// lists comma-separated, defaults as the original's). Pure.
func parsePythonConf(conf string) (pythonConf, error) {
	f, err := ini.LoadSources(ini.LoadOptions{AllowBooleanKeys: true, SkipUnrecognizableLines: true}, []byte(conf))
	if err != nil {
		return pythonConf{}, fmt.Errorf("the original's kuryr.conf: %w", err)
	}
	get := func(section, key, def string) string {
		if v := strings.TrimSpace(f.Section(section).Key(key).String()); v != "" {
			return v
		}
		return def
	}
	p := pythonConf{
		Project: get("neutron_defaults", "project", ""), PodSubnet: get("neutron_defaults", "pod_subnet", ""),
		ServiceSubnet: get("neutron_defaults", "service_subnet", ""),
		SubnetsDriver: get("kubernetes", "pod_subnets_driver", "default"),
		VIFDriver:     get("kubernetes", "pod_vif_driver", "neutron-vif"),
		Router:        get("namespace_subnet", "pod_router", ""), SubnetPool: get("namespace_subnet", "pod_subnet_pool", ""),
		Provider:    get("kubernetes", "endpoints_driver_octavia_provider", "default"),
		ExternalNet: get("neutron_defaults", "external_svc_net", ""), Algorithm: get("octavia_defaults", "lb_algorithm", "ROUND_ROBIN"),
	}
	for _, t := range strings.Split(get("neutron_defaults", "resource_tags", ""), ",") {
		if t = strings.TrimSpace(t); t != "" {
			p.Tags = append(p.Tags, t)
		}
	}
	return p, nil
}

// compare says where kuryr's configuration disagrees with the original's
// so that its objects could not be adopted as they are (fails), or would
// be replaced (warnings). Pure.
func compare(p pythonConf, c *config.Config) (fails, warnings []string) {
	nd, k := c.NeutronDefaults, c.Kubernetes
	if p.SubnetsDriver != k.PodSubnetsDriver {
		fails = append(fails, fmt.Sprintf("pod_subnets_driver: the original's is %s, kuryr's %s (pods' ports would not "+
			"be on the subnets kuryr gives their pods)", p.SubnetsDriver, k.PodSubnetsDriver))
	}
	same := func(option, theirs, ours string) { // theirs is what its objects are on
		if theirs != "" && theirs != ours {
			fails = append(fails, fmt.Sprintf("%s: the original's is %s, kuryr's %q", option, theirs, ours))
		}
	}
	if p.SubnetsDriver == config.SubnetDriverDefault {
		same("pod_subnet", p.PodSubnet, nd.PodSubnet)
	} else {
		same("pod_router", p.Router, c.NamespaceSubnet.PodRouter)
		if p.SubnetPool != "" && p.SubnetPool != c.NamespaceSubnet.PodSubnetPool {
			warnings = append(warnings, fmt.Sprintf("pod_subnet_pool: the original's is %s, kuryr's %s: "+
				"namespaces keep their subnets, new ones get theirs from kuryr's pool", p.SubnetPool, c.NamespaceSubnet.PodSubnetPool))
		}
	}
	same("service_subnet", p.ServiceSubnet, nd.ServiceSubnet)
	if p.Project != "" && nd.Project != "" && p.Project != nd.Project {
		fails = append(fails, fmt.Sprintf("project: the original's is %s, kuryr's %s", p.Project, nd.Project))
	}
	if p.ExternalNet != "" && nd.ExternalSvcNet == "" {
		fails = append(fails, fmt.Sprintf("external_svc_net: the original's is %s, kuryr has none: LoadBalancer Services "+
			"would lose their floating IPs", p.ExternalNet))
	} else if p.ExternalNet != "" && p.ExternalNet != nd.ExternalSvcNet {
		warnings = append(warnings, fmt.Sprintf("external_svc_net: the original's is %s, kuryr's %s: floating IPs the "+
			"original allocated are kept, new ones come from kuryr's", p.ExternalNet, nd.ExternalSvcNet))
	}
	if ours := c.OctaviaDefaults.Provider; p.Provider != ours && !(p.Provider == "default" && ours == "") {
		warnings = append(warnings, fmt.Sprintf("endpoints_driver_octavia_provider: the original's is %s, kuryr's %q: "+
			"kuryr replaces every load balancer (same VIP, connections cut once)", p.Provider, ours))
	}
	if ours := c.OctaviaDefaults.Algorithm; ours != "" && ours != p.Algorithm {
		warnings = append(warnings, fmt.Sprintf("lb_algorithm: the original's is %s, kuryr's %s: kuryr replaces every "+
			"pool (connections through it cut once)", p.Algorithm, ours))
	}
	switch p.VIFDriver {
	case "neutron-vif", "nested-vlan":
	case "nested-macvlan":
		fails = append(fails, "pod_vif_driver nested-macvlan: not migrated (kuryr gives each pod's pair its own MAC, "+
			"the original the port's: its pods would have to be recreated)")
	default:
		fails = append(fails, fmt.Sprintf("pod_vif_driver: the original's %s is not one kuryr has", p.VIFDriver))
	}
	return fails, warnings
}
