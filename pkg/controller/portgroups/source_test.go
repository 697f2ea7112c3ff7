package portgroups

import (
	"context"
	"slices"
	"testing"

	kuryrv1 "github.com/kuryr-k8s/kuryr/api/v1"
)

type fixed []string

func (f fixed) Groups(context.Context, *kuryrv1.KuryrPort) ([]string, error) { return f, nil }

type withDefaults struct{ fixed }

func (d withDefaults) DefaultGroups(context.Context) ([]string, error) { return d.fixed, nil }

// The default groups of Sources are those of the sources that have them.
func TestSourcesDefaultGroups(t *testing.T) {
	s := Sources{fixed{"lb-source"}, withDefaults{fixed{"open-in", "open-out"}}}
	got, err := s.DefaultGroups(context.Background())
	if err != nil || !slices.Equal(got, []string{"open-in", "open-out"}) {
		t.Fatalf("%v, %v", got, err)
	}
	all, err := s.Groups(context.Background(), &kuryrv1.KuryrPort{})
	if err != nil || !slices.Equal(all, []string{"lb-source", "open-in", "open-out"}) {
		t.Fatalf("%v, %v", all, err)
	}
}
