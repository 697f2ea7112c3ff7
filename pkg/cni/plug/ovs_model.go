package plug

import (
	"github.com/kuryr-k8s/kuryr/pkg/cni/plug/ovsdb"
)

// The Open_vSwitch database's tables and the columns kuryr monitors.
const (
	tRoot   = "Open_vSwitch"
	tBridge = "Bridge"
	tPort   = "Port"
	tIface  = "Interface"
)

var monitored = map[string][]string{
	tRoot:   {"next_cfg", "cur_cfg"},
	tBridge: {"name", "ports"},
	tPort:   {"name", "interfaces"},
	tIface:  {"name", "external_ids"},
}

// Minimal models of the rows kuryr reads, decoded from the cache.
type (
	ovsBridge struct {
		UUID, Name string
		Ports      []string
	}
	ovsPort struct {
		UUID, Name string
		Interfaces []string
	}
	ovsIface struct {
		UUID, Name  string
		ExternalIDs map[string]string
	}
)

func bridgeOf(r ovsdb.Row) ovsBridge {
	return ovsBridge{UUID: r.UUID, Name: ovsdb.String(r.Cols["name"]), Ports: ovsdb.UUIDs(r.Cols["ports"])}
}

func portOf(r ovsdb.Row) ovsPort {
	return ovsPort{UUID: r.UUID, Name: ovsdb.String(r.Cols["name"]), Interfaces: ovsdb.UUIDs(r.Cols["interfaces"])}
}

func ifaceOf(r ovsdb.Row) ovsIface {
	return ovsIface{UUID: r.UUID, Name: ovsdb.String(r.Cols["name"]), ExternalIDs: ovsdb.StringMap(r.Cols["external_ids"])}
}

// findBridge is the bridge named name.
func findBridge(t ovsdb.Tables, name string) (ovsBridge, bool) {
	for _, r := range t[tBridge] {
		if b := bridgeOf(r); b.Name == name {
			return b, true
		}
	}
	return ovsBridge{}, false
}

// findPort is the port named name and the bridge that holds it (a port no
// bridge holds is gone: OVSDB collects it).
func findPort(t ovsdb.Tables, name string) (ovsPort, ovsBridge, bool) {
	for _, r := range t[tPort] {
		p := portOf(r)
		if p.Name != name {
			continue
		}
		for _, br := range t[tBridge] {
			b := bridgeOf(br)
			for _, u := range b.Ports {
				if u == p.UUID {
					return p, b, true
				}
			}
		}
	}
	return ovsPort{}, ovsBridge{}, false
}

// findIface is the interface named name.
func findIface(t ovsdb.Tables, name string) (ovsIface, bool) {
	for _, r := range t[tIface] {
		if i := ifaceOf(r); i.Name == name {
			return i, true
		}
	}
	return ovsIface{}, false
}

// cfg is the Open_vSwitch row's cur_cfg: the next_cfg vswitchd applied.
func curCfg(t ovsdb.Tables) (int64, bool) {
	for _, r := range t[tRoot] {
		return ovsdb.Int(r.Cols["cur_cfg"]), true
	}
	return 0, false
}

// portOfIface is what kuryr recorded on an interface it plugged.
func portOfIface(i ovsIface) Port {
	m := i.ExternalIDs
	return Port{
		Name: i.Name, PortID: m["iface-id"], MAC: m["attached-mac"], PodUID: m["vm-uuid"],
		ContainerID: m[extContainer], IfName: m[extIfName], PodName: m[extPod],
	}
}
