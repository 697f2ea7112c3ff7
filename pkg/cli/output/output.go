// Package output prints what kubectl kuryr collected: tables like
// kubectl's (upper-case headers, columns aligned with text/tabwriter), or
// the collected data as JSON, YAML or through a JSONPath template (-o
// jsonpath=..., kubectl's syntax, over the JSON form).
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"
)

// Format is an -o value.
type Format string

// The formats of -o; and "jsonpath=TEMPLATE".
const (
	Table Format = "table"
	// Wide is the table: kubectl kuryr's tables already have every column.
	Wide Format = "wide"
	JSON Format = "json"
	YAML Format = "yaml"
)

const jsonpathPrefix = "jsonpath="

// ParseFormat checks an -o value (a JSONPath template is parsed).
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Table, Wide, JSON, YAML:
		return f, nil
	case "":
		return Table, nil
	}
	if tmpl, ok := strings.CutPrefix(s, jsonpathPrefix); ok {
		if _, err := parseJSONPath(tmpl); err != nil {
			return "", fmt.Errorf("-o %s: %w", s, err)
		}
		return Format(s), nil
	}
	return "", fmt.Errorf("-o %q: want table, wide, json, yaml or jsonpath=TEMPLATE", s)
}

func parseJSONPath(tmpl string) (*jsonpath.JSONPath, error) {
	// As kubectl's --allow-missing-template-keys (default true): a field
	// left out (omitempty) prints nothing instead of failing.
	j := jsonpath.New("output").AllowMissingKeys(true)
	if err := j.Parse(tmpl); err != nil {
		return nil, err
	}
	return j, nil
}

// Print writes data as JSON, YAML or through a JSONPath template, or calls
// table for the table formats.
func Print(w io.Writer, f Format, data any, table func(io.Writer) error) error {
	if tmpl, ok := strings.CutPrefix(string(f), jsonpathPrefix); ok {
		return printJSONPath(w, tmpl, data)
	}
	switch f {
	case JSON:
		b, err := json.MarshalIndent(data, "", "  ")
		if err != nil {
			return fmt.Errorf("encode JSON: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case YAML:
		b, err := yaml.Marshal(data)
		if err != nil {
			return fmt.Errorf("encode YAML: %w", err)
		}
		_, err = w.Write(b)
		return err
	}
	return table(w)
}

// printJSONPath applies the template to data's JSON form, as kubectl's
// -o jsonpath does to an object's.
func printJSONPath(w io.Writer, tmpl string, data any) error {
	j, err := parseJSONPath(tmpl)
	if err != nil {
		return err
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("decode JSON: %w", err)
	}
	if err := j.Execute(w, v); err != nil {
		return fmt.Errorf("-o jsonpath: %w", err)
	}
	return nil
}

// Rows is a table: headers, then rows of cells.
type Rows struct {
	Headers []string
	Cells   [][]string
}

// NewRows starts a table with these headers (upper-cased when printed).
func NewRows(headers ...string) *Rows { return &Rows{Headers: headers} }

// Add appends a row; an empty cell prints as "<none>", as kubectl does.
func (r *Rows) Add(cells ...string) { r.Cells = append(r.Cells, cells) }

// Write prints the table aligned, kubectl-style.
func (r *Rows) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	up := make([]string, len(r.Headers))
	for i, h := range r.Headers {
		up[i] = strings.ToUpper(h)
	}
	fmt.Fprintln(tw, strings.Join(up, "\t"))
	for _, row := range r.Cells {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = orNone(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// Section prints a titled block of "Key: value" lines, aligned, like
// kubectl describe; pairs alternate keys and values.
func Section(w io.Writer, title string, pairs ...string) error {
	if title != "" {
		fmt.Fprintf(w, "%s:\n", title)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(tw, "  %s:\t%s\n", pairs[i], orNone(pairs[i+1]))
	}
	return tw.Flush()
}

// Indented prints a table under a title, indented by two spaces.
func Indented(w io.Writer, title string, r *Rows) error {
	fmt.Fprintf(w, "%s:\n", title)
	if len(r.Cells) == 0 {
		_, err := fmt.Fprintln(w, "  <none>")
		return err
	}
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
	return nil
}
