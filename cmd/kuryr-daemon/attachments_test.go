package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestFetchAttachments(t *testing.T) {
	tests := []struct {
		name    string
		code    int
		body    string
		wantErr string
	}{
		{"ok", 200, `{"node":"n1","interfaces":[]}`, ""},
		{"ovsdb down", 503, "ovsdb not connected", "503 Service Unavailable: ovsdb not connected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.code)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			var out bytes.Buffer
			err := fetchAttachments(srv.URL+"/attachments", &out)
			if tt.wantErr == "" && (err != nil || out.String() != tt.body) {
				t.Fatalf("got %q, %v", out.String(), err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestAttachmentsNoDaemon(t *testing.T) {
	var out, errOut bytes.Buffer
	// Port 1 on loopback: nothing listens.
	code := attachments([]string{"--config-file", "", "--set", "cni_health_server.port=1"}, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "is kuryr-daemon running") || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}
