package daemon

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
)

// FuzzServeHTTP sends arbitrary bodies to the daemon's socket handler: it
// must always answer with a CNI error object or a result, never panic, and
// never plug anything but the interface derived from a port id into its
// own bridge. The seed corpus (testdata/fuzz/FuzzServeHTTP) holds valid
// requests of every command and hostile ones.
func FuzzServeHTTP(f *testing.F) {
	for _, r := range []*api.Request{
		request("ADD", "web", "u1", "c1"), request("DEL", "web", "u1", "c1"), request("CHECK", "web", "u1", "c1"),
		{Command: "STATUS"}, {Command: "GC", Config: []byte(`{"cniVersion":"1.1.0","cni.dev/valid-attachments":[]}`)},
		{Command: "ADD", ContainerID: "../..", Netns: "/proc/1/ns/net", IfName: "br-ex", Args: ";;;="},
	} {
		raw, _ := json.Marshal(r)
		f.Add(raw)
	}
	f.Add([]byte(`{"command":"ADD","config":"bm90IGpzb24="}`))
	f.Add([]byte("\x00\x01garbage"))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, o, _ := newDaemon()
		d.PortTimeout, d.UsableTimeout = time.Millisecond, time.Millisecond
		d.Registry.Set(kuryrPort("web", "u1"))
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, api.Path, bytes.NewReader(body)))
		var resp api.Response
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatalf("undecodable answer %q: %v", rec.Body.String(), err)
		}
		if resp.Error != nil && !knownCode(resp.Error.Code) {
			t.Errorf("unknown error code %d: %s", resp.Error.Code, resp.Error.Msg)
		}
		for name, p := range o.ports {
			if name != kuryrv1.HostIfName(p.PortID) || p.Bridge != "br-int" {
				t.Errorf("plugged %q into %q", name, p.Bridge)
			}
		}
	})
}

func knownCode(c uint) bool {
	switch c {
	case types.ErrIncompatibleCNIVersion, types.ErrUnsupportedField, types.ErrUnknownContainer,
		types.ErrInvalidEnvironmentVariables, types.ErrIOFailure, types.ErrDecodingFailure,
		types.ErrInvalidNetworkConfig, types.ErrTryAgainLater, types.ErrInternal,
		api.ErrNotReady, api.ErrCheckFailed, api.ErrPlug:
		return true
	}
	return false
}
