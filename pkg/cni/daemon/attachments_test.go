package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/ovs"
)

type fakeIfaces struct {
	ifaces []ovs.Interface
	err    error
}

func (f fakeIfaces) Interfaces(context.Context) ([]ovs.Interface, error) { return f.ifaces, f.err }

func TestAttachmentsHandler(t *testing.T) {
	reg := NewRegistry()
	reg.Set(&kuryrv1.KuryrPort{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Status: kuryrv1.KuryrPortStatus{VIFs: map[string]kuryrv1.VIF{"eth0": {PortID: "p1"}}}})
	ifaces := []ovs.Interface{
		{Name: "tapp1", ExternalIDs: map[string]string{"iface-id": "p1", "attached-mac": "fa:16:3e:00:00:01"},
			OFPort: 3, LinkState: "up", AdminState: "up", OVNInstalled: true},
		{Name: "kuryr-node", ExternalIDs: map[string]string{"iface-id": "p9"}, OFPort: -1},
	}
	tests := []struct {
		name     string
		lister   fakeIfaces
		remote   string
		wantCode int
		want     *api.Attachments
	}{
		{"interfaces with and without a pod", fakeIfaces{ifaces: ifaces}, "127.0.0.1:40000", http.StatusOK, &api.Attachments{Node: "n1",
			Interfaces: []api.Attachment{
				{Interface: "tapp1", PortID: "p1", MAC: "fa:16:3e:00:00:01", OFPort: 3, LinkState: "up", AdminState: "up",
					OVNInstalled: true, PodNamespace: "ns", PodName: "web"},
				{Interface: "kuryr-node", PortID: "p9", OFPort: -1},
			}}},
		{"no interfaces", fakeIfaces{}, "[::1]:40000", http.StatusOK, &api.Attachments{Node: "n1", Interfaces: []api.Attachment{}}},
		{"ovsdb down", fakeIfaces{err: errors.New("ovsdb not connected")}, "127.0.0.1:1", http.StatusServiceUnavailable, nil},
		{"not from the node", fakeIfaces{ifaces: ifaces}, "10.10.0.5:40000", http.StatusForbidden, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", api.AttachmentsPath, nil)
			req.RemoteAddr = tt.remote
			AttachmentsHandler("n1", tt.lister, reg).ServeHTTP(rec, req)
			if rec.Code != tt.wantCode {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantCode, rec.Body)
			}
			if tt.want == nil {
				return
			}
			var got api.Attachments
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(&got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, *tt.want)
			}
		})
	}
}
