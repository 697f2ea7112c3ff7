package ovs

import (
	"context"
	"fmt"
	"sort"

	"github.com/ovn-org/libovsdb/ovsdb"
)

// Interface is an OVS interface as ovs-vswitchd and ovn-controller left
// it: what a debugging user wants to see of a pod's attachment.
type Interface struct {
	Name         string
	ExternalIDs  map[string]string
	OFPort       int    // -1: vswitchd could not attach it; 0: not set yet
	LinkState    string // "up", "down" or "" (not reported)
	AdminState   string
	OVNInstalled bool
}

// ifaceColumns are the columns Interfaces reads; the cache monitors only
// some of them, so they are selected from the server.
var ifaceColumns = []string{"name", "external_ids", "ofport", "link_state", "admin_state"}

// Interfaces reads, straight from ovsdb-server (not the cache, which
// monitors fewer columns), the interfaces that carry an
// external_ids:iface-id (a Neutron port id), sorted by name. Read-only.
func (o *Client) Interfaces(ctx context.Context) ([]Interface, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	res, err := o.session().transact(ctx, connectWait, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: tIface,
		Where: []ovsdb.Condition{}, Columns: ifaceColumns})
	if err != nil {
		return nil, fmt.Errorf("read OVS interfaces: %w", err)
	}
	if len(res) != 1 {
		return nil, fmt.Errorf("read OVS interfaces: %d results to one select", len(res))
	}
	var out []Interface
	for _, row := range res[0].Rows {
		i := ifaceOfRow(row)
		if i.ExternalIDs["iface-id"] != "" {
			out = append(out, i)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out, nil
}

// ifaceOfRow decodes a selected row; optional columns (ofport, link_state,
// admin_state) come as a value or an empty set.
func ifaceOfRow(row ovsdb.Row) Interface {
	name, _ := row["name"].(string)
	i := Interface{Name: name, ExternalIDs: stringMap(row["external_ids"]),
		LinkState: optString(row["link_state"]), AdminState: optString(row["admin_state"])}
	if n, ok := optValue(row["ofport"]).(float64); ok {
		i.OFPort = int(n)
	}
	i.OVNInstalled = i.ExternalIDs["ovn-installed"] == "true"
	return i
}

func optValue(v any) any {
	if s, ok := v.(ovsdb.OvsSet); ok {
		if len(s.GoSet) == 1 {
			return s.GoSet[0]
		}
		return nil
	}
	return v
}

func optString(v any) string {
	s, _ := optValue(v).(string)
	return s
}

func stringMap(v any) map[string]string {
	out := map[string]string{}
	m, ok := v.(ovsdb.OvsMap)
	if !ok {
		return out
	}
	for k, val := range m.GoMap {
		ks, ok1 := k.(string)
		vs, ok2 := val.(string)
		if ok1 && ok2 {
			out[ks] = vs
		}
	}
	return out
}
