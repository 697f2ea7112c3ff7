// Package describe is `kubectl kuryr describe`: a pod, Service or
// NetworkPolicy with what kuryr made of it, in Kubernetes (KuryrPort,
// KuryrLoadBalancer, KuryrNetworkPolicy), in OpenStack (Neutron ports,
// security groups, Octavia load balancers) and, for pods, on the node
// (the OVS interface, through the node's kuryr-daemon).
package describe

import (
	"fmt"
	"strings"
)

// Kinds of targets.
const (
	KindPod           = "pod"
	KindService       = "service"
	KindNetworkPolicy = "networkpolicy"
)

var kinds = map[string]string{
	"pod": KindPod, "pods": KindPod, "po": KindPod,
	"service": KindService, "services": KindService, "svc": KindService,
	"networkpolicy": KindNetworkPolicy, "networkpolicies": KindNetworkPolicy, "netpol": KindNetworkPolicy,
}

// Target is what to describe.
type Target struct{ Kind, Name string }

// ParseTarget reads "KIND/NAME" or "KIND NAME", kubectl's spellings of the
// kinds included (pod, po, svc, service, netpol...).
func ParseTarget(args []string) (Target, error) {
	var kind, name string
	switch {
	case len(args) == 1 && strings.Contains(args[0], "/"):
		kind, name, _ = strings.Cut(args[0], "/")
	case len(args) == 2 && !strings.Contains(args[0], "/"):
		kind, name = args[0], args[1]
	default:
		return Target{}, fmt.Errorf("describe what? want pod/NAME, svc/NAME or networkpolicy/NAME (or KIND NAME), got %q",
			strings.Join(args, " "))
	}
	k, ok := kinds[strings.ToLower(kind)]
	if !ok {
		return Target{}, fmt.Errorf("cannot describe %q: kuryr knows pods, services and networkpolicies", kind)
	}
	if name == "" || strings.Contains(name, "/") {
		return Target{}, fmt.Errorf("%s: bad name %q", k, name)
	}
	return Target{Kind: k, Name: name}, nil
}
