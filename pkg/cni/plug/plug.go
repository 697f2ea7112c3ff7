// Package plug wires a pod's interface on the node's kernel side: a veth
// pair whose host end becomes an OVS port of the integration bridge (see
// package ovs) and whose pod end has the Neutron port's MAC, addresses and
// routes.
package plug
