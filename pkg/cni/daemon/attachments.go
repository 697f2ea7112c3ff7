package daemon

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/ovs"
)

// InterfaceLister reads the node's OVS interfaces (ovs.Client).
type InterfaceLister interface {
	Interfaces(ctx context.Context) ([]ovs.Interface, error)
}

// attachmentsTimeout bounds one read of OVSDB for the handler.
const attachmentsTimeout = 5 * time.Second

// AttachmentsHandler serves GET api.AttachmentsPath: the node's OVS
// interfaces that carry a Neutron port id, with the pod whose KuryrPort
// names each port when the registry knows it. Read-only; 503 when OVSDB
// cannot be read. Only for clients on the node itself (`kuryr-daemon
// attachments`, exec'd in the daemon's pod): the health port is on the
// node's addresses, and pods' names and ports are not for whoever reaches
// them.
func AttachmentsHandler(node string, lister InterfaceLister, reg *Registry) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !fromLoopback(r.RemoteAddr) {
			http.Error(w, "attachments are served to the node's loopback only", http.StatusForbidden)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), attachmentsTimeout)
		defer cancel()
		ifaces, err := lister.Interfaces(ctx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		out := api.Attachments{Node: node, Interfaces: attachmentsOf(ifaces, reg.podsByPort())}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}

func fromLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}

// attachmentsOf turns interfaces into attachments, naming their pods.
func attachmentsOf(ifaces []ovs.Interface, pods map[string][2]string) []api.Attachment {
	out := make([]api.Attachment, 0, len(ifaces))
	for _, i := range ifaces {
		id := i.ExternalIDs["iface-id"]
		a := api.Attachment{Interface: i.Name, PortID: id, MAC: i.ExternalIDs["attached-mac"], OFPort: i.OFPort,
			LinkState: i.LinkState, AdminState: i.AdminState, OVNInstalled: i.OVNInstalled}
		if p, ok := pods[id]; ok {
			a.PodNamespace, a.PodName = p[0], p[1]
		}
		out = append(out, a)
	}
	return out
}

// podsByPort maps the port ids of the known KuryrPorts' VIFs to their pod
// (namespace, name).
func (r *Registry) podsByPort() map[string][2]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][2]string{}
	for _, kp := range r.ports {
		for _, v := range kp.Status.VIFs {
			out[v.PortID] = [2]string{kp.Namespace, kp.Name}
		}
	}
	return out
}
