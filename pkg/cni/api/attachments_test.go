package api

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
			err := FetchAttachments(srv.URL+"/attachments", &out)
			if tt.wantErr == "" && (err != nil || out.String() != tt.body) {
				t.Fatalf("got %q, %v", out.String(), err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}
