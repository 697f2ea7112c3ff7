package describe

import (
	"context"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/cli/output"
	"github.com/kuryr-k8s/kuryr/pkg/neutron"
)

// report is what a describe collects: printable as a table or as data.
type report interface{ table(w io.Writer) error }

// Run describes the target in args and prints it in format f.
func Run(ctx context.Context, e *env.Env, args []string, f output.Format, w io.Writer) error {
	t, err := ParseTarget(args)
	if err != nil {
		return err
	}
	var r report
	switch t.Kind {
	case KindPod:
		r, err = Pod(ctx, e, t.Name)
	case KindService:
		r, err = Service(ctx, e, t.Name)
	default:
		r, err = NetworkPolicy(ctx, e, t.Name)
	}
	if err != nil {
		return err
	}
	return output.Print(w, f, r, r.table)
}

// GroupRef is a security group by name and id.
type GroupRef struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

func (g GroupRef) String() string {
	if g.Name == "" {
		return g.ID
	}
	return g.Name + " (" + g.ID + ")"
}

// groupNames resolves security group names, each group read once.
type groupNames struct {
	nc    *neutron.Client
	names map[string]string
}

func (g *groupNames) ref(ctx context.Context, id string) GroupRef {
	if g.names == nil {
		g.names = map[string]string{}
	}
	name, ok := g.names[id]
	if !ok {
		if sg, err := g.nc.GetSecurityGroup(ctx, id); err == nil {
			name = sg.Name
		}
		g.names[id] = name
	}
	return GroupRef{ID: id, Name: name}
}

// Condition is a condition of a kuryr resource.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

func conditions(cs []metav1.Condition) []Condition {
	out := make([]Condition, 0, len(cs))
	for _, c := range cs {
		out = append(out, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

func conditionRows(cs []Condition) *output.Rows {
	r := output.NewRows("type", "status", "reason", "message")
	for _, c := range cs {
		r.Add(c.Type, c.Status, c.Reason, c.Message)
	}
	return r
}

func join(s []string) string { return strings.Join(s, ", ") }

// problem prints a line saying what could not be read.
func problem(w io.Writer, what, err string) {
	if err != "" {
		fmt.Fprintf(w, "%s: %s\n", what, err)
	}
}
