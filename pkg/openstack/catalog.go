package openstack

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
)

// catalogError says that Keystone's catalog has no endpoint of a service
// for the region and interface asked for, and what it has instead.
type catalogError struct {
	service, region, iface string
	// regions have an endpoint of the service (any interface); ifaces are
	// the interfaces it has in region (in any region when region is "").
	regions, ifaces []string
	err             error
}

func (e *catalogError) Error() string {
	where := "interface " + e.iface
	if e.region != "" {
		where = "region " + e.region + ", " + where
	}
	msg := fmt.Sprintf("no %s endpoint for %s in the catalog", e.service, where)
	switch {
	case len(e.regions) == 0:
		return msg + fmt.Sprintf(" (it has no %s service at all)", e.service)
	case e.region != "" && !slices.Contains(e.regions, e.region):
		return msg + " (regions in the catalog: " + strings.Join(e.regions, ", ") + ")"
	}
	return msg + " (interfaces in the catalog: " + strings.Join(e.ifaces, ", ") + ")"
}

func (e *catalogError) Unwrap() error { return e.err }

// absent reports that gophercloud found no endpoint of a service for the
// region and interface asked for.
func absent(err error) bool {
	return errors.As(err, new(*gophercloud.ErrEndpointNotFound)) || errors.As(err, new(gophercloud.ErrEndpointNotFound)) ||
		errors.As(err, new(*gophercloud.ErrServiceNotFound)) || errors.As(err, new(gophercloud.ErrServiceNotFound))
}

// notInCatalog turns gophercloud's "no suitable endpoint" into a
// catalogError listing what the catalog pc authenticated with offers; other
// errors are returned as they are.
func notInCatalog(pc *gophercloud.ProviderClient, service string, eo gophercloud.EndpointOpts, err error) error {
	if !absent(err) {
		return err
	}
	r, ok := pc.GetAuthResult().(tokens.CreateResult)
	if !ok {
		return err
	}
	catalog, cerr := r.ExtractServiceCatalog()
	if cerr != nil {
		return err
	}
	eo.ApplyDefaults(service)
	ce := &catalogError{service: service, region: eo.Region, iface: string(eo.Availability), err: err}
	regions, ifaces := map[string]bool{}, map[string]bool{}
	for _, entry := range catalog.Entries {
		if !slices.Contains(eo.Types(), entry.Type) {
			continue
		}
		for _, ep := range entry.Endpoints {
			region := ep.Region
			if region == "" {
				region = ep.RegionID
			}
			regions[region] = true
			if eo.Region == "" || region == eo.Region || ep.RegionID == eo.Region {
				ifaces[ep.Interface] = true
			}
		}
	}
	ce.regions, ce.ifaces = sortedKeys(regions), sortedKeys(ifaces)
	return ce
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
