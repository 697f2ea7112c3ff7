package migrate

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// Record is what prepare found of the original and adopted, kept in the
// ConfigMap kuryr-migration in kuryr's namespace (the original's objects
// are deleted once read) for finish, and for people.
type Record struct {
	// Cluster is kuryr's cluster_name: what the objects were tagged for.
	Cluster string `json:"cluster"`
	// PythonTags are the original's [neutron_defaults] resource_tags.
	PythonTags []string `json:"pythonTags,omitempty"`
	// PythonNamespace is where the original ran.
	PythonNamespace string          `json:"pythonNamespace"`
	Ports           []PortRecord    `json:"ports,omitempty"`
	Networks        []NetworkRecord `json:"networks,omitempty"`
	Services        []ServiceRecord `json:"services,omitempty"`
	Policies        []PolicyRecord  `json:"policies,omitempty"`
	// Kept are the ports of running pods that are not adopted (their
	// other interfaces, pods not migrated): finish never deletes them.
	Kept []string `json:"kept,omitempty"`
	// Adopted: every object above is tagged (prepare's OpenStack step).
	Adopted bool `json:"adopted,omitempty"`
	// Finished: finish removed the original's finalizers and groups.
	Finished bool `json:"finished,omitempty"`
}

// Ref names a Kubernetes object and the UID it had.
type Ref struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

// PortRecord is a pod's port.
type PortRecord struct {
	Ref
	Node   string `json:"node,omitempty"`
	PortID string `json:"portId"`
	// Extra are the ports of its other interfaces (not migrated).
	Extra []string `json:"extra,omitempty"`
}

// NetworkRecord is a namespace's network (pod_subnets_driver = namespace).
type NetworkRecord struct {
	Namespace string `json:"namespace"`
	NetworkID string `json:"networkId"`
	SubnetID  string `json:"subnetId"`
	RouterID  string `json:"routerId,omitempty"`
}

// ServiceRecord is a Service's load balancer and floating IP.
type ServiceRecord struct {
	Ref
	LoadBalancerID string   `json:"loadBalancerId"`
	VIP            string   `json:"vip,omitempty"`
	Provider       string   `json:"provider,omitempty"`
	Listeners      []string `json:"listeners,omitempty"`
	Pools          []string `json:"pools,omitempty"`
	FloatingIPID   string   `json:"floatingIpId,omitempty"`
	FloatingIP     string   `json:"floatingIp,omitempty"`
	// FloatingIPAllocated: the original allocated it (alloc_method pool);
	// otherwise it is the user's (loadBalancerIP) and is never tagged.
	FloatingIPAllocated bool `json:"floatingIpAllocated,omitempty"`
}

// PolicyRecord is a NetworkPolicy's security group (deleted by finish).
type PolicyRecord struct {
	Ref
	SecurityGroupID string `json:"securityGroupId"`
}

const recordKey = "record.json"

// maxRecord is what a ConfigMap holds, less room for its metadata (about
// 5000 pods' ports).
const maxRecord = 1000 * 1000

// loadRecord reads the record; nil if there is none.
func loadRecord(ctx context.Context, c client.Reader, ns string) (*Record, error) {
	var cm corev1.ConfigMap
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.MigrationConfigMap}, &cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ConfigMap %s/%s: %w", ns, names.MigrationConfigMap, err)
	}
	var r Record
	if err := json.Unmarshal([]byte(cm.Data[recordKey]), &r); err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %s: %w", ns, names.MigrationConfigMap, recordKey, err)
	}
	return &r, nil
}

// saveRecord writes the record, creating its ConfigMap.
func saveRecord(ctx context.Context, c client.Client, ns string, r *Record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if len(data) > maxRecord {
		return fmt.Errorf("the record of %d ports, %d networks, %d Services and %d policies is %d bytes: more than a "+
			"ConfigMap holds (%d)", len(r.Ports), len(r.Networks), len(r.Services), len(r.Policies), len(data), maxRecord)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.MigrationConfigMap}}
	var have corev1.ConfigMap
	switch err := c.Get(ctx, client.ObjectKeyFromObject(cm), &have); {
	case apierrors.IsNotFound(err):
		cm.Data = map[string]string{recordKey: string(data)}
		err = c.Create(ctx, cm)
		if err != nil {
			return fmt.Errorf("create ConfigMap %s/%s: %w", ns, names.MigrationConfigMap, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read ConfigMap %s/%s: %w", ns, names.MigrationConfigMap, err)
	}
	have.Data = map[string]string{recordKey: string(data)}
	if err := c.Update(ctx, &have); err != nil {
		return fmt.Errorf("update ConfigMap %s/%s: %w", ns, names.MigrationConfigMap, err)
	}
	return nil
}
