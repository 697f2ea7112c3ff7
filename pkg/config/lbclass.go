package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
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

// Section and option names are case-insensitive, as cloud-provider-openstack
// (gcfg) reads them.
var (
	classSectionRE = regexp.MustCompile(`(?i)^LoadBalancerClass\s+"([^"]+)"$`)
	classPrefixRE  = regexp.MustCompile(`(?i)^LoadBalancerClass\b`)
)

// classNotRead says why the options of cloud-provider-openstack's classes
// that choose the VIP's and the members' subnets are not read.
var classNotRead = map[string]string{
	"network-id":       "the VIP is the ClusterIP, on the service subnet",
	"subnet-id":        "the VIP is the ClusterIP, on the service subnet",
	"member-subnet-id": "the members are the pods, on their own subnets",
}

// classes collects [LoadBalancerClass "name"] sections from the file and
// from --set overrides, and what in them is not read.
type classes struct {
	byName   map[string]LoadBalancerClass
	warnings []string
}

// section reports whether section is a class's (or meant to be one) and
// records what is wrong with its name.
func (cs *classes) section(section, source string) (string, bool) {
	section = strings.TrimSpace(section)
	if m := classSectionRE.FindStringSubmatch(section); m != nil {
		return m[1], true
	}
	if classPrefixRE.MatchString(section) {
		cs.warnings = append(cs.warnings, fmt.Sprintf("%s: [%s] is not a class section (want [LoadBalancerClass \"name\"]); ignored", source, section))
		return "", true
	}
	return "", false
}

// set sets one option of a class; a later value of the same option (a
// section given twice, an override) wins.
func (cs *classes) set(name, option, value, source string) {
	c := cs.byName[name]
	fields := map[string]*string{
		"floating-network-id": &c.FloatingNetworkID, "floating-subnet-id": &c.FloatingSubnetID,
		"floating-subnet": &c.FloatingSubnet, "floating-subnet-tags": &c.FloatingSubnetTags,
	}
	where := fmt.Sprintf("[LoadBalancerClass %q] %s", name, option)
	option = strings.ToLower(option)
	switch p, ok := fields[option]; {
	case ok:
		*p = strings.TrimSpace(value)
		cs.byName[name] = c
	case classNotRead[option] != "":
		cs.warnings = append(cs.warnings, fmt.Sprintf("%s: %s is not read: %s", source, where, classNotRead[option]))
	default:
		cs.warnings = append(cs.warnings, fmt.Sprintf("%s: unknown option %s; ignored", source, where))
	}
}

// readFile takes the class sections out of f.
func (cs *classes) readFile(f *ini.File, source string) {
	for _, s := range f.Sections() {
		name, ok := cs.section(s.Name(), source)
		if !ok {
			continue
		}
		for _, k := range s.Keys() {
			if name == "" {
				break // not a class: said by section
			}
			cs.set(name, k.Name(), k.Value(), source)
		}
		f.DeleteSection(s.Name())
	}
}

// override applies a --set section.option=value whose section is a
// class's, and reports whether it was.
func (cs *classes) override(key, value string) bool {
	// A class's name may hold dots: the option is after the last one.
	i := strings.LastIndex(key, ".")
	name, ok := cs.section(key[:max(i, 0)], "command line")
	if ok && name != "" {
		cs.set(name, key[i+1:], value, "command line")
	}
	return ok
}

// done drops what a class's subnet id makes moot, as
// cloud-provider-openstack does, with a warning.
func (cs *classes) done() (map[string]LoadBalancerClass, []string) {
	for _, name := range slices.Sorted(maps.Keys(cs.byName)) {
		c := cs.byName[name]
		if c.FloatingSubnetID != "" && (c.FloatingSubnet != "" || c.FloatingSubnetTags != "") {
			cs.warnings = append(cs.warnings, fmt.Sprintf("[LoadBalancerClass %q] floating-subnet and floating-subnet-tags "+
				"are ignored: floating-subnet-id names the subnet", name))
			c.FloatingSubnet, c.FloatingSubnetTags = "", ""
			cs.byName[name] = c
		}
	}
	return cs.byName, cs.warnings
}
