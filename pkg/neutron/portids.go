package neutron

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// portIDs asks Neutron for the ids of the ports q selects, and only their
// ids (fields=id): the cheap form of a port listing.
func (c *Client) portIDs(ctx context.Context, q url.Values) ([]string, error) {
	var body struct {
		Ports []struct {
			ID string `json:"id"`
		} `json:"ports"`
	}
	q.Set("fields", "id")
	if _, err := c.sc.Get(ctx, c.sc.ServiceURL("ports")+"?"+q.Encode(), &body, nil); err != nil {
		return nil, err
	}
	ids := make([]string, len(body.Ports))
	for i, p := range body.Ports {
		ids[i] = p.ID
	}
	return ids, nil
}

func addAll(set map[string]bool, ids []string) {
	for _, id := range ids {
		set[id] = true
	}
}

// ListPortIDs lists only the ids of the ports carrying all of tags and the
// given status ("" for any).
func (c *Client) ListPortIDs(ctx context.Context, tags []string, status string) (map[string]bool, error) {
	ids, err := c.portIDs(ctx, url.Values{"status": {status}, "tags": {strings.Join(tags, ",")}})
	if err != nil {
		return nil, fmt.Errorf("list %s port ids tagged %v: %w", status, tags, err)
	}
	set := make(map[string]bool, len(ids))
	addAll(set, ids)
	return set, nil
}

// idsPerPage is how many ports a page of ListPortIDsByOwner holds: a page
// Neutron answers well inside its timeout even when busy (about 1.2 ms a
// listed port on 2 busy cores).
const idsPerPage = 1000

// ListPortIDsByOwner lists the ids of the ports carrying all of tags whose
// device_owner is one of owners (Neutron reads a repeated filter as "any
// of"): a kind of port cluster-wide (the nodes' ports) in one paged
// listing, instead of a request per port.
func (c *Client) ListPortIDsByOwner(ctx context.Context, tags, owners []string) (map[string]bool, error) {
	set := map[string]bool{}
	for marker := ""; ; {
		q := url.Values{"tags": {strings.Join(tags, ",")}, "device_owner": owners,
			"limit": {strconv.Itoa(idsPerPage)}, "sort_key": {"id"}, "sort_dir": {"asc"}}
		if marker != "" {
			q.Set("marker", marker)
		}
		ids, err := c.portIDs(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("list port ids of %v tagged %v: %w", owners, tags, err)
		}
		addAll(set, ids)
		// A short page is the last; so is one that does not move past the
		// marker (a server that ignores it).
		if len(ids) < idsPerPage || ids[len(ids)-1] <= marker {
			return set, nil
		}
		marker = ids[len(ids)-1]
	}
}

// idsPerQuery is how many ids one ActivePorts request carries: 50 ids
// make a request line of about 2 KB, inside the 4 KB that uWSGI accepts
// for the request line and headers by default (eventlet: 8 KB) with room
// for a token.
const idsPerQuery = 50

// ActivePorts says which of ids are ACTIVE. It asks for those ports only
// (id=A&id=B&...&status=ACTIVE: Neutron reads a repeated filter as "any
// of"), so that its cost follows the ports asked about and found ACTIVE,
// not every port of the cluster: Neutron builds each listed port in full
// whatever fields are asked for. When a query fails, the ports found by
// the others are returned with the error (after a refusal the next queries
// are made, after a timeout or a server error not).
func (c *Client) ActivePorts(ctx context.Context, ids []string) (map[string]bool, error) {
	active := make(map[string]bool)
	var errs []error
	for chunk := range slices.Chunk(ids, idsPerQuery) {
		found, err := c.portIDs(ctx, url.Values{"status": {"ACTIVE"}, "id": chunk})
		if err != nil {
			errs = append(errs, fmt.Errorf("list which of %d ports are ACTIVE: %w", len(chunk), err))
			if !openstack.Refused(err) {
				break // unanswered or failing: the next queries would wait as long
			}
			continue // this query refused: the others are asked all the same
		}
		addAll(active, found)
	}
	return active, errors.Join(errs...)
}
