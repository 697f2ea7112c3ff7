package config

import (
	"strings"
	"testing"
)

// cloud-provider-openstack's sections, copied from a cloud.conf as they
// are written there (quoted values).
const classesConf = noauthConf + `
[LoadBalancerClass "internet"]
floating-network-id="c57af0a0-da92-49be-a98a-345ceca004b3"
floating-subnet-id = "f90d2440-d3c6-417a-a696-04e55eeb9279"
floating-subnet = public-*
[LoadBalancerClass "office"]
floating-subnet-tags = &office,v4
subnet-id = fa6a4e6c-6ae4-4dde-ae86-3e2f452c1f03
flavor = small
[LoadBalancerClass office]
floating-subnet = x
[loadbalancerclass  "dmz.v4"]
Floating-Network-ID = dmz
[LoadBalancerClass "dmz.v4"]
floating-subnet = dmz-*
[LoadBalancerClass "re"]
floating-subnet = ~^pub\.v4$
`

func TestLoadBalancerClasses(t *testing.T) {
	cfg, warnings, err := Load(write(t, classesConf), []string{`LoadBalancerClass "dmz.v4".floating-subnet=dmz-v4`,
		`LoadBalancerClass "cli".floating-subnet-id=s1`, `LoadBalancerClass cli.floating-subnet-id=s2`})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]LoadBalancerClass{
		"internet": {FloatingNetworkID: "c57af0a0-da92-49be-a98a-345ceca004b3", FloatingSubnetID: "f90d2440-d3c6-417a-a696-04e55eeb9279"},
		"office":   {FloatingSubnetTags: "&office,v4"},
		// Case-insensitive as cloud-provider-openstack reads it, a section
		// given twice merged, the command line last.
		"dmz.v4": {FloatingNetworkID: "dmz", FloatingSubnet: "dmz-v4"},
		"cli":    {FloatingSubnetID: "s1"},
		// A regular expression unquoted, read as written (docs/configuration.md).
		"re": {FloatingSubnet: `~^pub\.v4$`},
	}
	if len(cfg.LoadBalancerClasses) != len(want) {
		t.Errorf("classes %+v, want %+v", cfg.LoadBalancerClasses, want)
	}
	for name, c := range want {
		if cfg.LoadBalancerClasses[name] != c {
			t.Errorf("class %s = %+v, want %+v", name, cfg.LoadBalancerClasses[name], c)
		}
	}
	all := strings.Join(warnings, "\n")
	for _, w := range []string{
		`[LoadBalancerClass "internet"] floating-subnet and floating-subnet-tags are ignored`,
		`[LoadBalancerClass "office"] subnet-id is not read: the VIP is the ClusterIP`,
		`unknown option [LoadBalancerClass "office"] flavor`,
		`[LoadBalancerClass office] is not a class section`,
		`command line: [LoadBalancerClass cli] is not a class section`,
	} {
		if !strings.Contains(all, w) {
			t.Errorf("no warning %q in:\n%s", w, all)
		}
	}
	if strings.Contains(all, "unknown option [LoadBalancerClass \"internet\"]") || strings.Contains(all, "floating-network-id") {
		t.Errorf("a read option reported:\n%s", all)
	}
}
