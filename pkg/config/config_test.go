package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const noauthConf = `
[kubernetes]
cluster_name = test
[neutron]
auth_type = none
endpoint_override = http://127.0.0.1:9696
[neutron_defaults]
project = p1
pod_subnet = s1
pod_security_groups = sg1, sg2
`

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kuryr.conf")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name      string
		conf      string
		overrides []string
		wantErr   string
		wantWarn  string
		check     func(*testing.T, *Config)
	}{
		{name: "noauth", conf: noauthConf, check: func(t *testing.T, c *Config) {
			if !c.Neutron.NoAuth() || c.NeutronDefaults.Project != "p1" || c.NeutronDefaults.OVSBridge != "br-int" {
				t.Errorf("got %+v %+v", c.Neutron, c.NeutronDefaults)
			}
			if got := strings.Join(c.NeutronDefaults.PodSecurityGroups, "|"); got != "sg1|sg2" {
				t.Errorf("pod_security_groups = %q", got)
			}
			if c.Neutron.Timeout != 30*time.Second || c.Controller.PortWorkers != 2 {
				t.Errorf("defaults: timeout %v workers %d", c.Neutron.Timeout, c.Controller.PortWorkers)
			}
		}},
		{name: "override wins", conf: noauthConf, overrides: []string{"controller.port_workers=3", "neutron.timeout=1m"},
			check: func(t *testing.T, c *Config) {
				if c.Controller.PortWorkers != 3 || c.Neutron.Timeout != time.Minute {
					t.Errorf("got workers %d timeout %v", c.Controller.PortWorkers, c.Neutron.Timeout)
				}
			}},
		{name: "unknown option warns", conf: noauthConf + "[kubernetes]\nfoo = bar\n", wantWarn: "unknown option [kubernetes] foo"},
		{name: "original-only option warns", conf: noauthConf + "[vif_pool]\nports_pool_update_frequency = 5\n", wantWarn: "does not support"},
		{name: "bad bool", conf: noauthConf, overrides: []string{"kubernetes.port_debug=maybe"}, wantErr: "port_debug"},
		{name: "bad driver", conf: noauthConf, overrides: []string{"kubernetes.pod_subnets_driver=magic"}, wantErr: "must be one of"},
		{name: "negative workers", conf: noauthConf, overrides: []string{"controller.port_workers=0"}, wantErr: "at least 1"},
		{name: "namespace driver needs pool", conf: noauthConf, overrides: []string{"kubernetes.pod_subnets_driver=namespace"},
			wantErr: "pod_subnet_pool is required"},
		{name: "no pools with namespace driver", conf: noauthConf, overrides: []string{"kubernetes.pod_subnets_driver=namespace",
			"namespace_subnet.pod_subnet_pool=pool", "namespace_subnet.pod_router=r", "kubernetes.vif_pool_driver=neutron"},
			wantErr: "vif_pool_driver = neutron cannot be used with pod_subnets_driver = namespace"},
		{name: "node driver needs router", conf: noauthConf, overrides: []string{"kubernetes.pod_subnets_driver=node",
			"namespace_subnet.pod_subnet_pool=pool"}, wantErr: "pod_router is required with pod_subnets_driver = node"},
		{name: "node driver", conf: noauthConf, overrides: []string{"kubernetes.pod_subnets_driver=node",
			"namespace_subnet.pod_subnet_pool=pool", "namespace_subnet.pod_router=r"},
			check: func(t *testing.T, c *Config) {
				if c.Kubernetes.PodSubnetsDriver != SubnetDriverNode || c.Kubernetes.HANamespace != "kube-system" {
					t.Errorf("driver %q, nodes' KuryrNetworks in %q", c.Kubernetes.PodSubnetsDriver, c.Kubernetes.HANamespace)
				}
			}},
		{name: "noauth needs endpoint", conf: "[neutron]\nauth_type = none\n[neutron_defaults]\nproject = p\npod_subnet = s\n",
			wantErr: "endpoint_override is required"},
		{name: "no credentials", conf: "[neutron_defaults]\nproject = p\npod_subnet = s\n", wantErr: "[neutron] cloud is required"},
		{name: "password needs user", conf: "[neutron]\nauth_type = password\nauth_url = http://k\n[neutron_defaults]\nproject = p\npod_subnet = s\n",
			wantErr: "username is required"},
		{name: "bad cluster name", conf: noauthConf, overrides: []string{"kubernetes.cluster_name=a/b"}, wantErr: "cluster_name"},
		{name: "malformed override", conf: noauthConf, overrides: []string{"port_workers"}, wantErr: "section.option=value"},
		{name: "cleanup period 0 would spin", conf: noauthConf, overrides: []string{"controller.cleanup_period=0"}, wantErr: "cleanup_period"},
		{name: "negative period", conf: noauthConf, overrides: []string{"controller.resync_period=-5"}, wantErr: "resync_period"},
		{name: "no timeout", conf: noauthConf, overrides: []string{"neutron.timeout=0"}, wantErr: "[neutron] timeout"},
		{name: "active poll off", conf: noauthConf, overrides: []string{"controller.active_poll_interval=0"},
			check: func(t *testing.T, c *Config) {
				if c.Controller.ActivePoll != 0 {
					t.Errorf("active poll %v", c.Controller.ActivePoll)
				}
			}},
		{name: "active poll too fast", conf: noauthConf, overrides: []string{"controller.active_poll_interval=0.01"}, wantErr: "0 (off) or at least"},
		{name: "TLS verified by default", conf: noauthConf, check: func(t *testing.T, c *Config) {
			if !c.Kubernetes.SSLVerifyServerCrt {
				t.Error("ssl_verify_server_crt defaults to off")
			}
		}},
		{name: "OpenStack TLS and endpoints left to clouds.yaml by default", conf: noauthConf, check: func(t *testing.T, c *Config) {
			if n := c.Neutron; n.Insecure != nil || n.EndpointType != "" || n.RegionName != "" || n.CAFile != "" {
				t.Errorf("insecure %v, endpoint_type %q, region_name %q, cafile %q: want unset", n.Insecure, n.EndpointType, n.RegionName, n.CAFile)
			}
		}},
		{name: "insecure set explicitly", conf: noauthConf, overrides: []string{"neutron.insecure=false"}, check: func(t *testing.T, c *Config) {
			if c.Neutron.Insecure == nil || *c.Neutron.Insecure {
				t.Errorf("insecure = false: got %v", c.Neutron.Insecure)
			}
		}},
		{name: "bad insecure", conf: noauthConf, overrides: []string{"neutron.insecure=perhaps"}, wantErr: "[neutron] insecure"},
		{name: "domain IDs", conf: "[neutron]\nauth_type = password\nauth_url = http://k\nusername = u\npassword = p\nproject_name = p\n" +
			"user_domain_id = d1\nproject_domain_id = d2\n[neutron_defaults]\nproject = p\npod_subnet = s\n",
			check: func(t *testing.T, c *Config) {
				if c.Neutron.UserDomainID != "d1" || c.Neutron.ProjectDomainID != "d2" {
					t.Errorf("user_domain_id %q, project_domain_id %q", c.Neutron.UserDomainID, c.Neutron.ProjectDomainID)
				}
			}},
		{name: "node ports served by default", conf: noauthConf, check: func(t *testing.T, c *Config) {
			if !c.Kubernetes.ServeNodePorts {
				t.Error("serve_node_ports defaults to off")
			}
		}},
		{name: "node ports off", conf: noauthConf + "[kubernetes]\nserve_node_ports = false\n", check: func(t *testing.T, c *Config) {
			if c.Kubernetes.ServeNodePorts {
				t.Error("serve_node_ports = false ignored")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warns, err := Load(write(t, tt.conf), tt.overrides)
			if err == nil {
				err = cfg.ValidateController()
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantWarn != "" && !strings.Contains(strings.Join(warns, "\n"), tt.wantWarn) {
				t.Errorf("warnings %q do not mention %q", warns, tt.wantWarn)
			}
			if tt.check != nil {
				tt.check(t, cfg)
			}
		})
	}
}

func TestDescribeListsEveryOption(t *testing.T) {
	d := Describe()
	for _, o := range options(&Config{}) {
		if !strings.Contains(d, "#"+o.name+" = ") {
			t.Errorf("Describe() misses [%s] %s", o.section, o.name)
		}
	}
}

func TestLeaseHolder(t *testing.T) {
	for _, tc := range []struct{ identity, want string }{
		{LeaseIdentity("kuryr-controller-6db4d5df7-2s5bd", "0f8e-11"), "kuryr-controller-6db4d5df7-2s5bd"},
		{LeaseIdentity("node_with_underscores", "u"), "node_with_underscores"},
		{"bare", "bare"},
		{"_x", "_x"},
	} {
		if got := LeaseHolder(tc.identity); got != tc.want {
			t.Errorf("LeaseHolder(%q) = %q, want %q", tc.identity, got, tc.want)
		}
	}
}

// TestNestedOptions: nested modes refuse what cannot work on VM nodes,
// each naming the option.
func TestNestedOptions(t *testing.T) {
	base := strings.Replace(noauthConf, "cluster_name = test", "cluster_name = test\npod_vif_driver = nested-vlan", 1)
	macvlan := strings.Replace(base, "nested-vlan", "nested-macvlan", 1)
	for _, tt := range []struct{ conf, want string }{
		{macvlan + "[kubernetes]\nvif_pool_driver = neutron\n[pod_vif_nested]\nworker_nodes_subnets = s\n", "vif_pool_driver = neutron"},
		{base + "[kubernetes]\nvif_pool_driver = neutron\n[pod_vif_nested]\nworker_nodes_subnets = s\n", ""}, // pools of subports
		{base + "[pod_vif_nested]\nworker_nodes_subnets = s\n[neutron_defaults]\nnode_subnet = n\n", "node_subnet must be empty"},
	} {
		c, _, err := Load(write(t, tt.conf), nil)
		if err == nil {
			err = c.ValidateController()
		}
		if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.conf, err, tt.want)
		}
	}
	c, _, err := Load(write(t, base+"[pod_vif_nested]\nworker_nodes_subnets = a, b\nrev_update_attempts = 5\n[binding]\nlink_iface = ens3\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ValidateController(); err != nil || !c.Nested() || len(c.PodVIFNested.WorkerNodesSubnets) != 2 ||
		c.PodVIFNested.RevUpdateAttempts != 5 || c.Binding.LinkIface != "ens3" {
		t.Errorf("%v: %+v %+v", err, c.PodVIFNested, c.Binding)
	}
}
