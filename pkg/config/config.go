// Package config reads kuryr.conf, the INI file operators of the original
// kuryr-kubernetes already have: every option kuryr implements keeps the
// original section and option name. Options are declared once, in a table
// (options.go), with their type, default and validation, so that parsing,
// overriding from flags, reporting unknown options and documenting them all
// agree.
package config

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"gopkg.in/ini.v1"
)

// Config is kuryr's configuration after defaults, file and overrides.
type Config struct {
	Kubernetes         Kubernetes
	Neutron            Auth
	Octavia            Endpoint
	OctaviaDefaults    OctaviaDefaults
	NeutronDefaults    NeutronDefaults
	NamespaceSubnet    NamespaceSubnet
	Controller         Controller
	HealthServer       HealthServer
	PrometheusExporter PrometheusExporter
	CNIDaemon          CNIDaemon
	CNIHealthServer    HealthServer
	VIFPool            VIFPool
	NetworkPolicy      NetworkPolicy
	PodVIFNested       PodVIFNested
	Binding            Binding
	// LoadBalancerClasses are the [LoadBalancerClass "name"] sections, by
	// name (lbclass.go).
	LoadBalancerClasses map[string]LoadBalancerClass
}

// Pod VIF drivers ([kubernetes] pod_vif_driver): ports bound to the node
// (the node is a hypervisor, an OVN chassis), or nodes that are VMs of the
// cloud whose pods sit on the VM's port.
const (
	PodVIFNeutron       = "neutron-vif"
	PodVIFNestedVLAN    = "nested-vlan"
	PodVIFNestedMacvlan = "nested-macvlan"
)

// PodVIFNested is the [pod_vif_nested] section (nested-vlan and
// nested-macvlan).
type PodVIFNested struct {
	// WorkerNodesSubnets are the subnets of the VMs' ports, on which a
	// node's port is found from its address.
	WorkerNodesSubnets []string
	// RevUpdateAttempts bounds the re-reads of a VM's port whose allowed
	// address pairs changed under an update (nested-macvlan).
	RevUpdateAttempts int
}

// Binding is the [binding] section (kuryr-daemon in nested modes).
type Binding struct {
	// LinkIface is the VM's NIC pods' VLAN and macvlan interfaces are made
	// on; empty: the interface of the node's default route.
	LinkIface string
}

// Nested says whether pods sit on their VM's port.
func (c *Config) Nested() bool {
	return c.Kubernetes.PodVIFDriver == PodVIFNestedVLAN || c.Kubernetes.PodVIFDriver == PodVIFNestedMacvlan
}

// NetworkPolicy is the [network_policy] section (new in this
// implementation; the original enabled policies through its handler and
// driver lists).
type NetworkPolicy struct {
	Enabled bool
	// UnrestrictedIngress: the sources a pod that no policy isolates for
	// ingress admits (the open-ingress group's rules); empty: the cluster's
	// networks.
	UnrestrictedIngress []string
	// AddressGroups: peers as address groups where Neutron enforces them.
	AddressGroups bool
}

// VIFPool is the [vif_pool] section: ready ports per node
// ([kubernetes] vif_pool_driver = neutron).
type VIFPool struct {
	Min, Max, Batch int
}

// Kubernetes is the [kubernetes] section.
type Kubernetes struct {
	Kubeconfig         string
	APIRoot            string
	TokenFile          string
	SSLCACrtFile       string
	SSLVerifyServerCrt bool
	ClusterName        string
	PodSubnetsDriver   string
	PortDebug          bool
	UseEvents          bool
	ControllerHA       bool
	HANamespace        string
	VIFPoolDriver      string
	// PodVIFDriver: neutron-vif, nested-vlan or nested-macvlan.
	PodVIFDriver string
	// RefuseUnserved: ClusterIPs without a load balancer or an endpoint
	// are refused through a refuse port per node (on the service network).
	RefuseUnserved bool
	// ServeNodePorts: kuryr-daemon serves node ports (there is no
	// kube-proxy); the controller's Warnings follow it.
	ServeNodePorts bool
	// ServeExternalIPs: Services' externalIPs become their VIPs' floating
	// IPs.
	ServeExternalIPs bool
}

// Auth is the [neutron] section: how to reach OpenStack. One identity serves
// Neutron and Octavia, as in the original.
type Auth struct {
	// AuthType is "none" (noauth services), "password",
	// "v3applicationcredential", or "" to take everything from clouds.yaml.
	AuthType                    string
	Cloud                       string
	CloudsFile                  string
	AuthURL                     string
	Username                    string
	Password                    string
	UserDomainName              string
	UserDomainID                string
	ProjectID                   string
	ProjectName                 string
	ProjectDomainName           string
	ProjectDomainID             string
	ApplicationCredentialID     string
	ApplicationCredentialSecret string
	// RegionName and EndpointType select the catalog's endpoints; empty:
	// the clouds.yaml entry's region_name and interface, else any region
	// and the public interface.
	RegionName       string
	EndpointType     string
	EndpointOverride string
	// CAFile verifies the OpenStack endpoints; empty: the clouds.yaml
	// entry's cacert, else the system's CAs.
	CAFile string
	// Insecure is nil when kuryr.conf does not say: the clouds.yaml
	// entry's verify decides, else certificates are verified.
	Insecure *bool
	Timeout  time.Duration
}

// MinBindTimeout is the least time a port listed unbound is left to
// Neutron before kuryr takes it for never bound (see BindTimeout).
const MinBindTimeout = time.Minute

// BindTimeout is how long after its creation a port that kuryr did not
// see created (its create went unanswered) may still be unbound because
// Neutron is still creating it: twice the request bound, and at least
// MinBindTimeout. An overloaded Neutron goes on with a bulk create long
// after its client gave up, binding its ports one after the other, and a
// port deleted or written before Neutron is done can be left with a stale
// OVN port (one that makes a later port with its address a virtual port,
// and unbinds it when Neutron's maintenance task repairs it).
func (a Auth) BindTimeout() time.Duration { return max(2*a.Timeout, MinBindTimeout) }

// Endpoint is a service section with only an endpoint override ([octavia]).
type Endpoint struct {
	EndpointOverride string
}

// OctaviaDefaults is the [octavia_defaults] section.
type OctaviaDefaults struct {
	// Provider is the Octavia provider of Services' load balancers
	// ([kubernetes] endpoints_driver_octavia_provider in the original).
	Provider  string
	Algorithm string
	// LoadBalancerClass is the spec.loadBalancerClass kuryr serves besides
	// none.
	LoadBalancerClass string
}

// EffectiveAlgorithm returns the lb_algorithm to use: the configured one, else the
// one the provider supports (ovn: SOURCE_IP_PORT only).
func (o *OctaviaDefaults) EffectiveAlgorithm() string {
	switch {
	case o.Algorithm != "":
		return o.Algorithm
	case o.Provider == "ovn":
		return "SOURCE_IP_PORT"
	}
	return "ROUND_ROBIN"
}

// Services reports whether kuryr serves Services (a service subnet is set).
func (c *Config) Services() bool { return c.NeutronDefaults.ServiceSubnet != "" }

// NeutronDefaults is the [neutron_defaults] section.
type NeutronDefaults struct {
	Project           string
	PodSubnet         string
	ServiceSubnet     string
	NodeSubnet        string
	PodSecurityGroups []string
	OVSBridge         string
	ExternalSvcNet    string
	ExternalSvcSubnet string
	NetworkDeviceMTU  int
	ResourceTags      []string
}

// NamespaceSubnet is the [namespace_subnet] section.
type NamespaceSubnet struct {
	PodRouter     string
	PodSubnetPool string
}

// Controller is the [controller] section (new in this implementation).
type Controller struct {
	PortWorkers    int
	PortBatchSize  int
	NetworkWorkers int
	ServiceWorkers int
	ResyncPeriod   time.Duration
	CleanupPeriod  time.Duration
	ActivePoll     time.Duration
}

// HealthServer is the [health_server] section.
type HealthServer struct{ Port int }

// PrometheusExporter is the [prometheus_exporter] section.
type PrometheusExporter struct {
	ControllerExporterPort int
	CNIExporterPort        int
	// Auth: MetricsAuthKubernetes or MetricsAuthNone (package metricsauth).
	Auth string
}

// Who may read the metrics ([prometheus_exporter] auth).
const (
	MetricsAuthKubernetes = "kubernetes"
	MetricsAuthNone       = "none"
)

// CNIDaemon is the [cni_daemon] section.
type CNIDaemon struct {
	NodeName             string
	SocketPath           string
	VIFAnnotationTimeout time.Duration
	ActiveTimeout        time.Duration
	WaitForUsable        string
	DisableTxChecksum    bool
	OVSDBConnection      string
	// ConntrackCleanup: stale Service entries of the connection tracker
	// are deleted, through ovs-vswitchd's control socket VSwitchdCtl
	// ("": found next to the OVSDB socket).
	ConntrackCleanup bool
	VSwitchdCtl      string
	CNIBinDir        string
	CNIConfDir       string
	CNIBinary        string
	CNIVersion       string
	// AttachmentsDir holds a VM node's attachment records (nested modes).
	AttachmentsDir string
}

// Overrides collects repeated --set section.option=value flags.
type Overrides []string

// String implements flag.Value.
func (o *Overrides) String() string { return strings.Join(*o, ",") }

// Set implements flag.Value.
func (o *Overrides) Set(v string) error { *o = append(*o, v); return nil }

// Type names the flag's value in help (pflag).
func (o *Overrides) Type() string { return "section.option=value" }

// Subnet drivers for [kubernetes] pod_subnets_driver.
const (
	SubnetDriverDefault   = "default"
	SubnetDriverNamespace = "namespace"
	SubnetDriverNode      = "node"
)

// Load reads file (if not empty), then applies overrides of the form
// "section.option=value". It returns the configuration and warnings about
// options it does not know or does not implement; an invalid value is an
// error naming the option.
func Load(file string, overrides []string) (*Config, []string, error) {
	cfg := &Config{}
	opts := options(cfg)
	for _, o := range opts {
		if err := o.set(o.def); err != nil {
			return nil, nil, fmt.Errorf("default of [%s] %s: %w", o.section, o.name, err)
		}
	}
	var warnings []string
	cls := &classes{byName: map[string]LoadBalancerClass{}}
	if file != "" {
		f, err := ini.LoadSources(ini.LoadOptions{Insensitive: false, AllowBooleanKeys: true}, file)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", file, err)
		}
		cls.readFile(f, file)
		w, err := apply(opts, iniValues(f), file)
		if err != nil {
			return nil, nil, err
		}
		warnings = append(warnings, w...)
	}
	values := map[string]string{}
	for _, kv := range overrides {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.Contains(k, ".") {
			return nil, nil, fmt.Errorf("override %q: want section.option=value", kv)
		}
		if !cls.override(k, v) {
			values[k] = v
		}
	}
	w, err := apply(opts, values, "command line")
	if err != nil {
		return nil, nil, err
	}
	warnings = append(warnings, w...)
	cfg.LoadBalancerClasses, w = cls.done()
	warnings = append(warnings, w...)
	return cfg, warnings, nil
}

// iniValues flattens a file into "section.option" keys; the DEFAULT section
// is "DEFAULT".
func iniValues(f *ini.File) map[string]string {
	out := map[string]string{}
	for _, s := range f.Sections() {
		for _, k := range s.Keys() {
			out[s.Name()+"."+k.Name()] = k.Value()
		}
	}
	return out
}

// apply sets each known option, and reports the rest.
func apply(opts []*option, values map[string]string, source string) ([]string, error) {
	byKey := map[string]*option{}
	for _, o := range opts {
		byKey[o.section+"."+o.name] = o
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var warnings []string
	for _, k := range keys {
		section, name, _ := strings.Cut(k, ".")
		o, ok := byKey[k]
		switch {
		case ok:
			if err := o.set(values[k]); err != nil {
				return warnings, fmt.Errorf("%s: [%s] %s = %q: %w", source, section, name, values[k], err)
			}
		case originalOnly[k]:
			warnings = append(warnings, fmt.Sprintf("%s: [%s] %s is an option of the original kuryr-kubernetes that this implementation does not support; ignored", source, section, name))
		default:
			warnings = append(warnings, fmt.Sprintf("%s: unknown option [%s] %s; ignored", source, section, name))
		}
	}
	return warnings, nil
}
