package neutron

import (
	"context"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	"github.com/kuryr-k8s/kuryr/pkg/openstack"
)

// Kinds of the Neutron objects AddTags tags (the standard attributes'
// resource types).
const (
	KindPort          = "ports"
	KindNetwork       = "networks"
	KindSubnet        = "subnets"
	KindFloatingIP    = "floatingips"
	KindSecurityGroup = "security-groups"
)

// AddTags gives a Neutron object tags, keeping those it has: one read, and
// one write if any is missing. It returns whether it wrote.
func (c *Client) AddTags(ctx context.Context, kind, id string, tags []string) (bool, error) {
	have, err := attributestags.List(ctx, c.sc, kind, id).Extract()
	if err != nil {
		return false, fmt.Errorf("read the tags of %s %s: %w", kind, id, err)
	}
	want, missing := openstack.WithTags(have, tags)
	if !missing {
		return false, nil
	}
	return true, c.setTags(ctx, kind, id, want)
}

// RemoveTag takes one tag off a Neutron object; an object or a tag that
// is gone is not an error.
func (c *Client) RemoveTag(ctx context.Context, kind, id, tag string) error {
	if err := ignoreNotFound(attributestags.Delete(ctx, c.sc, kind, id, tag).ExtractErr()); err != nil {
		return fmt.Errorf("remove tag %s from %s %s: %w", tag, kind, id, err)
	}
	return nil
}

// Rename names a network or a subnet (kind KindNetwork or KindSubnet).
func (c *Client) Rename(ctx context.Context, kind, id, name string) error {
	var err error
	if kind == KindNetwork {
		_, err = networks.Update(ctx, c.sc, id, networks.UpdateOpts{Name: &name}).Extract()
	} else {
		_, err = subnets.Update(ctx, c.sc, id, subnets.UpdateOpts{Name: &name}).Extract()
	}
	if err != nil {
		return fmt.Errorf("rename %s %s to %s: %w", kind, id, name, err)
	}
	return nil
}
