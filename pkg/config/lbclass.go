package config

import (
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/ini.v1"
)

// LoadBalancerClass is a [LoadBalancerClass "name"] section, written as in
// cloud-provider-openstack's cloud.conf so that its sections can be copied
// over: where a LoadBalancer Service annotated
// loadbalancer.openstack.org/class: name gets its floating IP. What a class
// names takes precedence over the Service's own annotations, as there.
type LoadBalancerClass struct {
	FloatingNetworkID  string
	FloatingSubnetID   string
	FloatingSubnet     string
	FloatingSubnetTags string
}

// SubnetChosen says whether the class chooses the floating subnet (by id,
// or by name pattern and tags).
func (c LoadBalancerClass) SubnetChosen() bool {
	return c.FloatingSubnetID != "" || c.FloatingSubnet != "" || c.FloatingSubnetTags != ""
}

var classSectionRE = regexp.MustCompile(`^LoadBalancerClass\s+"([^"]+)"$`)

// classNotRead says why the options of cloud-provider-openstack's classes
// that choose the VIP's and the members' subnets are not read.
var classNotRead = map[string]string{
	"network-id":       "the VIP is the ClusterIP, on the service subnet",
	"subnet-id":        "the VIP is the ClusterIP, on the service subnet",
	"member-subnet-id": "the members are the pods, on their own subnets",
}

// readClasses takes the [LoadBalancerClass "name"] sections out of f and
// returns them, with what in them is not read.
func readClasses(f *ini.File, source string) (map[string]LoadBalancerClass, []string) {
	classes := map[string]LoadBalancerClass{}
	var warnings []string
	for _, s := range f.Sections() {
		m := classSectionRE.FindStringSubmatch(strings.TrimSpace(s.Name()))
		if m == nil {
			if strings.HasPrefix(s.Name(), "LoadBalancerClass") {
				warnings = append(warnings, fmt.Sprintf("%s: [%s] is not a class section (want [LoadBalancerClass \"name\"]); ignored", source, s.Name()))
				f.DeleteSection(s.Name())
			}
			continue
		}
		c, w := readClass(s, source)
		classes[m[1]] = c
		warnings = append(warnings, w...)
		f.DeleteSection(s.Name())
	}
	return classes, warnings
}

// readClass reads one class section.
func readClass(s *ini.Section, source string) (LoadBalancerClass, []string) {
	var c LoadBalancerClass
	fields := map[string]*string{
		"floating-network-id": &c.FloatingNetworkID, "floating-subnet-id": &c.FloatingSubnetID,
		"floating-subnet": &c.FloatingSubnet, "floating-subnet-tags": &c.FloatingSubnetTags,
	}
	var warnings []string
	for _, k := range s.Keys() {
		p, ok := fields[k.Name()]
		switch why, named := classNotRead[k.Name()]; {
		case ok:
			*p = strings.TrimSpace(k.Value())
		case named:
			warnings = append(warnings, fmt.Sprintf("%s: [%s] %s is not read: %s", source, s.Name(), k.Name(), why))
		default:
			warnings = append(warnings, fmt.Sprintf("%s: unknown option [%s] %s; ignored", source, s.Name(), k.Name()))
		}
	}
	if c.FloatingSubnetID != "" && (c.FloatingSubnet != "" || c.FloatingSubnetTags != "") {
		warnings = append(warnings, fmt.Sprintf("%s: [%s] floating-subnet and floating-subnet-tags are ignored: "+
			"floating-subnet-id names the subnet", source, s.Name()))
		c.FloatingSubnet, c.FloatingSubnetTags = "", ""
	}
	return c, warnings
}
