package config

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// option is one configuration option bound to a field of Config.
type option struct {
	section, name, def, help string
	set                      func(string) error
}

func str(p *string) func(string) error {
	return func(v string) error { *p = strings.TrimSpace(v); return nil }
}

func boolean(p *bool) func(string) error {
	return func(v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("not a boolean")
		}
		*p = b
		return nil
	}
}

// optBool is a boolean that may be left unset (empty): nil then.
func optBool(p **bool) func(string) error {
	return func(v string) error {
		if strings.TrimSpace(v) == "" {
			*p = nil
			return nil
		}
		var b bool
		if err := boolean(&b)(v); err != nil {
			return err
		}
		*p = &b
		return nil
	}
}

func integer(p *int, min int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("not an integer")
		}
		if n < min {
			return fmt.Errorf("must be at least %d", min)
		}
		*p = n
		return nil
	}
}

// seconds reads durations the way oslo.config options were written (a number
// of seconds), and also Go durations ("1m30s"). The value must be at least
// min; with zeroOff, 0 is also accepted (it switches something off).
func seconds(p *time.Duration, min time.Duration, zeroOff bool) func(string) error {
	return func(v string) error {
		v = strings.TrimSpace(v)
		var d time.Duration
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			d = time.Duration(f * float64(time.Second))
		} else if d, err = time.ParseDuration(v); err != nil {
			return fmt.Errorf("not a duration (seconds, or e.g. 1m30s)")
		}
		switch {
		case d == 0 && zeroOff:
		case d < min && zeroOff:
			return fmt.Errorf("must be 0 (off) or at least %s", min)
		case d < min:
			return fmt.Errorf("must be at least %s", min)
		}
		*p = d
		return nil
	}
}

func list(p *[]string) func(string) error {
	return func(v string) error {
		*p = nil
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				*p = append(*p, s)
			}
		}
		return nil
	}
}

func cidrs(p *[]string) func(string) error {
	return func(v string) error {
		var out []string
		if err := list(&out)(v); err != nil {
			return err
		}
		for _, c := range out {
			if _, err := netip.ParsePrefix(c); err != nil {
				return fmt.Errorf("%q is not a CIDR", c)
			}
		}
		*p = out
		return nil
	}
}

func oneOf(p *string, allowed ...string) func(string) error {
	return func(v string) error {
		v = strings.TrimSpace(v)
		for _, a := range allowed {
			if v == a {
				*p = v
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

// options binds every implemented option to cfg. Sections and names are the
// original's where the option existed there.
func options(c *Config) []*option {
	k, n, nd := &c.Kubernetes, &c.Neutron, &c.NeutronDefaults
	return []*option{
		{"kubernetes", "kubeconfig", "", "kubeconfig file; empty: in-cluster, or api_root + token_file", str(&k.Kubeconfig)},
		{"kubernetes", "api_root", "", "Kubernetes API URL when no kubeconfig is given", str(&k.APIRoot)},
		{"kubernetes", "token_file", "", "bearer token file for api_root", str(&k.TokenFile)},
		{"kubernetes", "ssl_ca_crt_file", "", "CA bundle for api_root", str(&k.SSLCACrtFile)},
		{"kubernetes", "ssl_verify_server_crt", "true", "verify the API server certificate (api_root); false sends the token to whatever answers", boolean(&k.SSLVerifyServerCrt)},
		{"kubernetes", "cluster_name", "kubernetes", "identifies this cluster in Neutron tags; unique per OpenStack project", str(&k.ClusterName)},
		{"kubernetes", "pod_subnets_driver", SubnetDriverDefault, "default: one shared pod subnet; namespace: a network per namespace; node: a network per node (both: subnets from [namespace_subnet] pod_subnet_pool on pod_router)", oneOf(&k.PodSubnetsDriver, SubnetDriverDefault, SubnetDriverNamespace, SubnetDriverNode)},
		{"kubernetes", "port_debug", "true", "name Neutron ports <namespace>/<pod>", boolean(&k.PortDebug)},
		{"kubernetes", "use_events", "true", "record Kubernetes Events for what users must see", boolean(&k.UseEvents)},
		{"kubernetes", "vif_pool_driver", "noop", "noop: a port per pod; neutron: pools of ready ports per node (default and node subnet drivers; on nested-vlan VMs, subports attached in advance)", oneOf(&k.VIFPoolDriver, "noop", "neutron")},
		{"kubernetes", "pod_vif_driver", "neutron-vif", "neutron-vif: pods' ports are bound to their node (nodes are hypervisors: OVN chassis with the cloud's br-int); nested-vlan: nodes are VMs of the cloud, each pod's port is a subport of the VM's trunk with a VLAN id of its own and the pod a VLAN interface of the VM's NIC; nested-macvlan: nodes are VMs, each pod's address is an allowed address pair of the VM's port and the pod a macvlan interface (security groups, and so NetworkPolicies, then apply to the VM's port only). A node's label kuryr.openstack.org/pod-vif overrides this for that node", oneOf(&k.PodVIFDriver, PodVIFNeutron, PodVIFNestedVLAN, PodVIFNestedMacvlan)},
		{"pod_vif_nested", "worker_nodes_subnets", "", "subnets of the VMs' ports (nested modes): a node's port is the one holding the node's InternalIP on one of them (comma separated subnet ids); empty: on any subnet", list(&c.PodVIFNested.WorkerNodesSubnets)},
		{"pod_vif_nested", "rev_update_attempts", "3", "nested-macvlan: re-reads of a VM's port whose allowed address pairs another writer changed under an update, before the reconcile is retried with backoff", integer(&c.PodVIFNested.RevUpdateAttempts, 1)},
		{"binding", "link_iface", "", "kuryr-daemon in nested modes: the VM's NIC pods' VLAN or macvlan interfaces are made on; empty: the interface of the node's default route", str(&c.Binding.LinkIface)},
		{"network_policy", "enabled", "true", "enforce NetworkPolicies with security groups: every pod port then carries a policy group or an open group per direction, besides pod_security_groups (which should admit only the nodes, for health checks, and the service subnet, for hairpin traffic)", boolean(&c.NetworkPolicy.Enabled)},
		{"network_policy", "unrestricted_ingress_cidrs", "", "sources a pod that no NetworkPolicy isolates for ingress admits (the kuryr-open-ingress group); empty: the cluster's networks (every subnet on the cluster's router: pods, nodes, the cloud's VMs on tenant networks there; the pod subnet pool), read again every minute, so that the cloud's own networks reach such pods while clients from elsewhere come in only through LoadBalancer Services and their loadBalancerSourceRanges", cidrs(&c.NetworkPolicy.UnrestrictedIngress)},
		{"network_policy", "address_groups", "true", "NetworkPolicy peers become Neutron address groups holding the peers' pods' addresses (one call when a pod joins or leaves a peer, no port update) where Neutron enforces a rule's remote address group, which the leader probes through the dataplane at start (a probe port on pod_subnet, plugged on its own node: needs NODE_NAME); elsewhere, and with false, peers are remote security groups whose members are the peers' ports", boolean(&c.NetworkPolicy.AddressGroups)},
		{"vif_pool", "ports_pool_min", "5", "refill a node's pool below this many ready ports", integer(&c.VIFPool.Min, 0)},
		{"vif_pool", "ports_pool_max", "0", "keep at most this many released ports per node (0: no limit)", integer(&c.VIFPool.Max, 0)},
		{"vif_pool", "ports_pool_batch", "10", "ports created per refill, in one bulk request", integer(&c.VIFPool.Batch, 1)},
		{"kubernetes", "refuse_unserved_services", "true", "refuse at once (TCP reset, ICMP port unreachable), as kube-proxy does, connections to a ClusterIP that has no load balancer yet or no ready endpoint, through a port per node on the service network that kuryr-daemon plugs into a namespace of its own (needs service_subnet, and nodes that plug into ovs_bridge); false: they go unanswered until the load balancer serves them", boolean(&k.RefuseUnserved)},
		{"kubernetes", "controller_ha", "false", "run several kuryr-controllers, one active (a Lease elects it)", boolean(&k.ControllerHA)},
		{"kubernetes", "controller_ha_namespace", "kube-system", "namespace of the kuryr-controller Lease, and of the nodes' KuryrNetworks (pod_subnets_driver = node)", str(&k.HANamespace)},
		{"kubernetes", "serve_external_ips", "true", "a Service's spec.externalIPs become its VIP's floating IP (the first one that is a floating IP of the project, or an address of external_svc_net kuryr allocates); anyone who may create Services may then take such an address (CVE-2020-8554: with untrusted users, turn this off or enable the API server's DenyServiceExternalIPs admission plugin); false: externalIPs get a Warning", boolean(&k.ServeExternalIPs)},
		{"kubernetes", "serve_node_ports", "true", "kuryr-daemon serves the node ports of NodePort and LoadBalancer Services on every node address (nftables table inet kuryr-node-ports: DNAT to the ClusterIP, masqueraded; needs net.ipv4.ip_forward = 1 on the nodes), as there is no kube-proxy; false: the daemons remove that table and the controller warns that node ports are not served. Ignored when service_subnet is empty", boolean(&k.ServeNodePorts)},

		{"neutron", "auth_type", "", "none, password, v3applicationcredential; empty: the clouds.yaml entry that cloud names (its auth_type, auth, region_name, interface, cacert, verify, cert and key)", oneOf(&n.AuthType, "", "none", "noauth", "password", "v3password", "v3applicationcredential", "applicationcredential")},
		{"neutron", "cloud", "", "entry of clouds.yaml to use when auth_type is empty; region_name, endpoint_type, cafile and insecure set here override the entry's", str(&n.Cloud)},
		{"neutron", "clouds_file", "", "clouds.yaml path; empty: $OS_CLIENT_CONFIG_FILE, else clouds.yaml in the working directory, ~/.config/openstack, /etc/openstack (a secure.yaml next to it is merged)", str(&n.CloudsFile)},
		{"neutron", "auth_url", "", "Keystone URL (auth_type = password or v3applicationcredential), e.g. https://keystone.example.com:5000/v3", str(&n.AuthURL)},
		{"neutron", "username", "", "user (auth_type = password)", str(&n.Username)},
		{"neutron", "password", "", "its password (auth_type = password)", str(&n.Password)},
		{"neutron", "user_domain_name", "Default", "domain of username, by name (auth_type = password); ignored when user_domain_id is set", str(&n.UserDomainName)},
		{"neutron", "user_domain_id", "", "domain of username, by ID (auth_type = password); wins over user_domain_name", str(&n.UserDomainID)},
		{"neutron", "project_id", "", "project the token is scoped to (auth_type = password); wins over project_name", str(&n.ProjectID)},
		{"neutron", "project_name", "", "project the token is scoped to, by name (auth_type = password), in project_domain_id or project_domain_name", str(&n.ProjectName)},
		{"neutron", "project_domain_name", "Default", "domain of project_name, by name; ignored when project_domain_id is set", str(&n.ProjectDomainName)},
		{"neutron", "project_domain_id", "", "domain of project_name, by ID; wins over project_domain_name", str(&n.ProjectDomainID)},
		{"neutron", "application_credential_id", "", "auth_type = v3applicationcredential: the credential carries its project, no project or domain option applies", str(&n.ApplicationCredentialID)},
		{"neutron", "application_credential_secret", "", "its secret (auth_type = v3applicationcredential)", str(&n.ApplicationCredentialSecret)},
		{"neutron", "region_name", "", "region of the Neutron and Octavia endpoints in Keystone's catalog; empty: the clouds.yaml entry's region_name (with cloud), else the first endpoint of any region", str(&n.RegionName)},
		{"neutron", "endpoint_type", "", "catalog interface: public, internal, admin; empty: the clouds.yaml entry's interface (with cloud), else public", oneOf(&n.EndpointType, "", "public", "internal", "admin")},
		{"neutron", "endpoint_override", "", "Neutron URL, required with auth_type = none; otherwise it replaces the catalog's network endpoint", str(&n.EndpointOverride)},
		{"neutron", "cafile", "", "CA bundle (PEM) that verifies the certificates of Keystone, Neutron and Octavia; overrides the clouds.yaml entry's cacert; empty: that cacert, else the system's CAs. A missing or unreadable file is an error, never a fallback", str(&n.CAFile)},
		{"neutron", "insecure", "", "true: do not verify OpenStack endpoints' certificates (a CA file is then read but not used, and a warning logged); false: verify; empty: the clouds.yaml entry's verify (with cloud), else verify", optBool(&n.Insecure)},
		{"neutron", "timeout", "30", "bound on each OpenStack request (seconds)", seconds(&n.Timeout, time.Second, false)},
		{"octavia", "endpoint_override", "", "Octavia URL, required with auth_type = none", str(&c.Octavia.EndpointOverride)},
		{"kubernetes", "endpoints_driver_octavia_provider", "", "Octavia provider of Services' load balancers (e.g. ovn, amphora); empty: Octavia's default", str(&c.OctaviaDefaults.Provider)},
		{"octavia_defaults", "lb_algorithm", "", "pools' lb_algorithm; empty: SOURCE_IP_PORT with the ovn provider (the only one it has), ROUND_ROBIN otherwise", oneOf(&c.OctaviaDefaults.Algorithm, "", "ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT")},
		{"octavia_defaults", "load_balancer_class", "kuryr.openstack.org/octavia", "spec.loadBalancerClass kuryr serves, besides Services without one; Services of any other class are left to their controller", str(&c.OctaviaDefaults.LoadBalancerClass)},

		{"neutron_defaults", "project", "", "project owning the Neutron resources kuryr creates", str(&nd.Project)},
		{"neutron_defaults", "pod_subnet", "", "pod subnet (default subnet driver)", str(&nd.PodSubnet)},
		{"neutron_defaults", "service_subnet", "", "subnet of Services' load balancer VIPs (the ClusterIPs); empty: kuryr serves no Services", str(&nd.ServiceSubnet)},
		{"neutron_defaults", "node_subnet", "", "subnet of the nodes' management ports (on the pods' router): each node gets a Neutron port plugged into its ovs_bridge, so that it reaches pods without NAT (bare-metal nodes that are OVN chassis); empty: none (nodes that are VMs on Neutron reach pods already)", str(&nd.NodeSubnet)},
		{"neutron_defaults", "pod_security_groups", "", "security groups of pod ports (comma separated)", list(&nd.PodSecurityGroups)},
		{"neutron_defaults", "ovs_bridge", "br-int", "integration bridge pods are plugged into", str(&nd.OVSBridge)},
		{"neutron_defaults", "external_svc_net", "", "external network for LoadBalancer Services", str(&nd.ExternalSvcNet)},
		{"neutron_defaults", "external_svc_subnet", "", "external subnet for LoadBalancer Services", str(&nd.ExternalSvcSubnet)},
		{"neutron_defaults", "network_device_mtu", "0", "cap on the pod MTU; 0: the network's MTU", integer(&nd.NetworkDeviceMTU, 0)},
		{"neutron_defaults", "resource_tags", "", "extra tags on every Neutron resource kuryr creates", list(&nd.ResourceTags)},
		{"namespace_subnet", "pod_router", "", "router namespace and node subnets are attached to (namespace and node modes)", str(&c.NamespaceSubnet.PodRouter)},
		{"namespace_subnet", "pod_subnet_pool", "", "subnet pool namespace and node subnets come from (namespace and node modes)", str(&c.NamespaceSubnet.PodSubnetPool)},

		{"controller", "port_workers", "2", "concurrent Neutron port creation requests (2 suits a 2-core Neutron; raise for bigger ones)", integer(&c.Controller.PortWorkers, 1)},
		{"controller", "port_batch_size", "50", "most pod ports created in one Neutron bulk request: ports asked for while requests are in flight go together in the next; 1: a request per port. Fewer when Neutron is slow: each request carries as many ports as Neutron, at the pace it has shown (a time per request plus a time per port, fitted to the recent requests), creates in half of [neutron] timeout (a bulk that times out may still commit, costing lookups and leaving duplicates for the sweep)", integer(&c.Controller.PortBatchSize, 1)},
		{"controller", "network_workers", "2", "concurrent KuryrNetwork reconciles", integer(&c.Controller.NetworkWorkers, 1)},
		{"controller", "service_workers", "16", "concurrent KuryrLoadBalancer reconciles (Octavia requests)", integer(&c.Controller.ServiceWorkers, 1)},
		{"controller", "resync_period", "600", "full re-reconcile of every object (seconds)", seconds(&c.Controller.ResyncPeriod, 10*time.Second, false)},
		{"controller", "active_poll_interval", "1", "ask Neutron which ports became ACTIVE this often while any is not (seconds; a query per 50 of the waiting ports, only about them; while Neutron is slow, 4 × its answer time, at most 10 intervals); 0: never, KuryrPorts then never show active (nodes in wait_for_usable = neutron-active need it)", seconds(&c.Controller.ActivePoll, 100*time.Millisecond, true)},
		{"controller", "cleanup_period", "300", "interval of the orphaned Neutron resource sweep (seconds)", seconds(&c.Controller.CleanupPeriod, time.Second, false)},
		{"health_server", "port", "8082", "controller /readyz and /livez port", integer(&c.HealthServer.Port, 0)},
		{"prometheus_exporter", "controller_exporter_port", "9654", "controller metrics port", integer(&c.PrometheusExporter.ControllerExporterPort, 0)},
		{"prometheus_exporter", "cni_exporter_port", "9655", "daemon metrics port", integer(&c.PrometheusExporter.CNIExporterPort, 0)},
		{"prometheus_exporter", "auth", MetricsAuthKubernetes, "who may read the metrics: kubernetes: HTTPS (a self-signed certificate) to callers whose bearer token the API server authenticates and authorizes for GET on /metrics (bind the ClusterRole kuryr-metrics-reader to your Prometheus); none: plain HTTP to anyone reaching the port", oneOf(&c.PrometheusExporter.Auth, MetricsAuthKubernetes, MetricsAuthNone)},
		{"cni_daemon", "node_name", "", "this node's Kubernetes name; empty: $KUBERNETES_NODE_NAME, else the hostname", str(&c.CNIDaemon.NodeName)},
		{"cni_daemon", "socket_path", "/run/kuryr/cni.sock", "root-only unix socket kuryr-cni talks to", str(&c.CNIDaemon.SocketPath)},
		{"cni_daemon", "vif_annotation_timeout", "60", "how long a CNI ADD waits for the controller's port data (seconds)", seconds(&c.CNIDaemon.VIFAnnotationTimeout, time.Second, false)},
		{"cni_daemon", "active_timeout", "60", "how long a CNI ADD waits for a plugged port to carry traffic (seconds)", seconds(&c.CNIDaemon.ActiveTimeout, time.Second, false)},
		{"cni_daemon", "wait_for_usable", "ovn-installed", "ovn-installed (OVN), neutron-active (other ML2 drivers) or none", oneOf(&c.CNIDaemon.WaitForUsable, "ovn-installed", "neutron-active", "none")},
		{"cni_daemon", "disable_tx_checksum_offload", "false", "turn tx checksum offload off in pods (needed with OVS's userspace datapath)", boolean(&c.CNIDaemon.DisableTxChecksum)},
		{"cni_daemon", "ovsdb_connection", "unix:/run/openvswitch/db.sock", "the node's ovsdb-server", str(&c.CNIDaemon.OVSDBConnection)},
		{"cni_daemon", "conntrack_cleanup", "true", "delete the connection-tracking entries that keep a Service connection from its load balancer (a SYN or datagram sent before the load balancer served the ClusterIP, a UDP flow to a backend that is gone), as kube-proxy does, through ovs-vswitchd's control socket", boolean(&c.CNIDaemon.ConntrackCleanup)},
		{"cni_daemon", "ovs_vswitchd_ctl", "", "ovs-vswitchd's control socket; empty: ovs-vswitchd.<pid>.ctl (or ovs-vswitchd.ctl) next to the ovsdb_connection socket", str(&c.CNIDaemon.VSwitchdCtl)},
		{"cni_daemon", "attachments_dir", "/var/lib/kuryr/attachments", "VM nodes (nested modes): where pods' attachments are recorded, one file each (a hypervisor node records them in OVS)", str(&c.CNIDaemon.AttachmentsDir)},
		{"cni_daemon", "cni_bin_dir", "/opt/cni/bin", "where kuryr-cni is installed", str(&c.CNIDaemon.CNIBinDir)},
		{"cni_daemon", "cni_conf_dir", "/etc/cni/net.d", "where the network configuration is written", str(&c.CNIDaemon.CNIConfDir)},
		{"cni_daemon", "cni_binary", "", "kuryr-cni to install; empty: next to kuryr-daemon", str(&c.CNIDaemon.CNIBinary)},
		{"cni_daemon", "cni_version", "1.0.0", "cniVersion of the installed configuration (containerd 1.6 reads up to 1.0.0)", str(&c.CNIDaemon.CNIVersion)},
		{"cni_health_server", "port", "8090", "daemon /readyz and /livez port", integer(&c.CNIHealthServer.Port, 0)},
	}
}

// originalOnly lists options of the original project that are recognised
// but not implemented, so that an operator's old kuryr.conf produces a clear
// note instead of an "unknown option".
var originalOnly = map[string]bool{}

func init() {
	for _, k := range []string{
		"kubernetes.enabled_handlers",
		"kubernetes.service_subnets_driver", "kubernetes.pod_security_groups_driver",
		"kubernetes.service_security_groups_driver", "kubernetes.pod_project_driver",
		"kubernetes.service_project_driver", "kubernetes.namespace_project_driver",
		"kubernetes.network_policy_project_driver", "kubernetes.endpoints_lbaas_driver",
		"kubernetes.service_public_ip_driver",
		"kubernetes.nodes_subnets_driver", "kubernetes.network_policy_driver", "kubernetes.multi_vif_drivers",
		"kubernetes.additional_ifname_prefix", "kubernetes.enable_manager",
		"kubernetes.controller_ha_elector_port", "kubernetes.watch_retry_timeout",
		"kubernetes.watch_connection_timeout", "kubernetes.watch_read_timeout",
		"kubernetes.watch_reconcile_period", "kubernetes.ssl_client_crt_file", "kubernetes.ssl_client_key_file",
		"neutron_defaults.lbaas_activation_timeout", "neutron_defaults.subnet_mapping",
		"octavia_defaults.member_mode", "octavia_defaults.enforce_sg_rules",
		"octavia_defaults.timeout_client_data", "octavia_defaults.timeout_member_data",
		"vif_pool.ports_pool_update_frequency", "vif_pool.vif_pool_mapping",
		"cni_daemon.bind_address", "cni_daemon.worker_num", "cni_daemon.pyroute2_timeout",
		"cni_daemon.docker_mode", "cni_daemon.netns_proc_dir", "cni_daemon.cni_failures_count",
		"cni_health_server.max_memory_usage", "cni_health_server.cg_path",
		"binding.default_driver", "binding.driver",
		"neutron.auth_section",
	} {
		originalOnly[k] = true
	}
}
