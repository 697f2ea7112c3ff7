// Package output prints what kubectl kuryr collected: tables like
// kubectl's (upper-case headers, columns aligned with text/tabwriter), or
// the collected data as JSON or YAML.
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// Format is an -o value.
type Format string

// The formats of -o.
const (
	Table Format = "table"
	JSON  Format = "json"
	YAML  Format = "yaml"
)

// ParseFormat checks an -o value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case Table, JSON, YAML:
		return f, nil
	case "":
		return Table, nil
	}
	return "", fmt.Errorf("-o %q: want table, json or yaml", s)
}

// Print writes data as JSON or YAML, or calls table for the table format.
func Print(w io.Writer, f Format, data any, table func(io.Writer) error) error {
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
