package main

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/kuryr-k8s/kuryr/pkg/config"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// leaseIdentity names this controller in the Lease: its pod ($POD_NAME, set
// by the manifests) or else its host, then a unique suffix. On the host
// network every replica has the node's hostname, which need not tell nodes
// apart; the pod name does, so that operators (and kubectl kuryr doctor)
// see which pod leads.
func leaseIdentity() string {
	who := os.Getenv("POD_NAME")
	if who == "" {
		who, _ = os.Hostname()
	}
	return config.LeaseIdentity(who, string(uuid.NewUUID()))
}

// newLeaseLock is the controller_ha election's lock.
func newLeaseLock(restCfg *rest.Config, k config.Kubernetes) (resourcelock.Interface, error) {
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(restCfg))
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, k.HANamespace, names.Lease,
		cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: leaseIdentity()})
	if err != nil {
		return nil, fmt.Errorf("leader election lock: %w", err)
	}
	return lock, nil
}
