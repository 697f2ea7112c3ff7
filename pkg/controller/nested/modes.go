package nested

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

// ModeNeutron: the node is a hypervisor; its pods' ports are bound to it.
const ModeNeutron = "neutron-vif"

// Modes says how each node's pods are plugged: the node's label
// kuryr.openstack.org/pod-vif, else [kubernetes] pod_vif_driver. A cluster
// may so mix hypervisor nodes and VM nodes.
type Modes struct {
	Nodes   client.Reader
	Default string
}

// Of is node's mode. A node that is gone has the default (its pods'
// ports are being released); a label naming no mode is an error.
func (m *Modes) Of(ctx context.Context, node string) (string, error) {
	var n corev1.Node
	err := m.Nodes.Get(ctx, client.ObjectKey{Name: node}, &n)
	if apierrors.IsNotFound(err) {
		return m.Default, nil
	}
	if err != nil {
		return "", fmt.Errorf("read node %s: %w", node, err)
	}
	return ModeOf(&n, m.Default)
}

// ModeOf is a node's mode by its label, def without one. Pure.
func ModeOf(n *corev1.Node, def string) (string, error) {
	v, ok := n.Labels[kuryrv1.PodVIFLabel]
	if !ok {
		return def, nil
	}
	switch v {
	case ModeNeutron, ModeVLAN, ModeMacvlan:
		return v, nil
	}
	return "", fmt.Errorf("node %s: label %s=%q is none of %s, %s, %s: %w", n.Name, kuryrv1.PodVIFLabel, v,
		ModeNeutron, ModeVLAN, ModeMacvlan, ErrInvalidMode)
}

// ErrInvalidMode: a node's label names no mode.
var ErrInvalidMode = errors.New("not a pod VIF mode")

// OnVM says whether a node is a VM node (its label, else def, is a nested
// mode); a label naming no mode counts as not (Modes.Of reports it). Pure.
func OnVM(n *corev1.Node, def string) bool {
	mode, err := ModeOf(n, def)
	return err == nil && (mode == ModeVLAN || mode == ModeMacvlan)
}

// Poolable says whether ports of a node in mode can wait in a pool: a
// hypervisor's (bound to it) and a nested-vlan VM's (subports of its trunk,
// attached in advance). Not nested-macvlan's: a pair on the VM's port
// admits the pod's traffic, and pairs are few per port. Pure.
func Poolable(mode string) bool { return mode == ModeNeutron || mode == ModeVLAN }

// PoolableNode says whether a node's pods take pooled ports (its label,
// else def); a label naming no mode counts as not. Pure.
func PoolableNode(n *corev1.Node, def string) bool {
	mode, err := ModeOf(n, def)
	return err == nil && Poolable(mode)
}
