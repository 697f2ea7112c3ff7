package output

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestRowsWrite(t *testing.T) {
	r := NewRows("status", "check", "message")
	r.Add("OK", "controller", "kuryr-controller has 2/2 replicas ready")
	r.Add("FAIL", "daemons", "")
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	want := "STATUS   CHECK        MESSAGE\n" +
		"OK       controller   kuryr-controller has 2/2 replicas ready\n" +
		"FAIL     daemons      <none>\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in   string
		want Format
		err  bool
	}{
		{"", Table, false}, {"table", Table, false}, {"json", JSON, false}, {"yaml", YAML, false}, {"wide", Wide, false},
		{"jsonpath={.items[*].name}", "jsonpath={.items[*].name}", false}, {"jsonpath={.items[", "", true}, {"xml", "", true},
	}
	for _, tt := range tests {
		got, err := ParseFormat(tt.in)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("ParseFormat(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestPrint(t *testing.T) {
	data := []map[string]string{{"check": "crds", "status": "OK"}}
	tests := []struct {
		f    Format
		want string
	}{
		{JSON, "\"check\": \"crds\""},
		{YAML, "- check: crds\n  status: OK\n"},
		{Table, "table"},
		{Wide, "table"},
		{`jsonpath={range [?(@.status=="OK")]}{.check}{"\n"}{end}`, "crds\n"},
	}
	table := func(w io.Writer) error { _, err := io.WriteString(w, "table"); return err }
	for _, tt := range tests {
		var b bytes.Buffer
		if err := Print(&b, tt.f, data, table); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tt.want) {
			t.Errorf("%s: %q does not contain %q", tt.f, b.String(), tt.want)
		}
	}
}

func TestSectionAndIndented(t *testing.T) {
	var b bytes.Buffer
	_ = Section(&b, "Pod", "Name", "web", "Node", "")
	r := NewRows("id")
	_ = Indented(&b, "Ports", r)
	want := "Pod:\n  Name: web\n  Node: <none>\nPorts:\n  <none>\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
