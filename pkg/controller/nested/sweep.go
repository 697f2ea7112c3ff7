package nested

import (
	"context"
	"errors"
	"fmt"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// MacvlanParents are the VM ports of the cluster's nested-macvlan nodes,
// with their allowed address pairs as Neutron has them now (the sweep
// reads them before it lists the ports that own pairs). A node whose VM
// port is not found or not read is left out (logged).
func (p *Placer) MacvlanParents(ctx context.Context) ([]neutron.ParentPort, error) {
	var nodes corev1.NodeList
	if err := p.Modes.Nodes.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	var out []neutron.ParentPort
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if mode, err := ModeOf(n, p.Modes.Default); err != nil || mode != ModeMacvlan {
			continue
		}
		parent, err := p.Parents.Of(ctx, n.Name, false)
		if apierrors.IsNotFound(err) || errors.Is(err, ErrNoParent) {
			log.FromContext(ctx).Info("the node's VM port is not known: its pairs are not swept", "node", n.Name,
				"reason", err.Error())
			continue
		}
		if err != nil {
			// One node's port not read (ambiguous, Neutron busy) leaves
			// the others' pairs swept.
			log.FromContext(ctx).Info("the node's VM port is not read: its pairs are not swept this time",
				"node", n.Name, "reason", err.Error())
			continue
		}
		port, err := p.Pairs.Neutron.GetParentPort(ctx, parent.PortID)
		if err != nil {
			p.forgetIfGone(n.Name, err)
			log.FromContext(ctx).Info("the node's VM port is not read: its pairs are not swept this time",
				"node", n.Name, "port", parent.PortID, "reason", err.Error())
			continue
		}
		out = append(out, *port)
	}
	return out, nil
}

// RemovePairs takes pairs (address and MAC) off a VM port, at its revision.
func (p *Placer) RemovePairs(ctx context.Context, parent string, pairs []ports.AddressPair) error {
	return p.Pairs.Remove(ctx, parent, pairs)
}
