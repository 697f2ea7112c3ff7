package doctor

import "context"

// Step is one step of a command that changes things (uninstall, migrate):
// its finding, and whether the next step may run.
type Step func(ctx context.Context) (Finding, bool)

// RunSteps runs steps in order until one says stop or ctx ends (Ctrl-C),
// and returns their findings and why ctx ended, if it did.
func RunSteps(ctx context.Context, steps ...Step) ([]Finding, error) {
	var out []Finding
	for _, s := range steps {
		f, goOn := s(ctx)
		out = append(out, f)
		if !goOn || ctx.Err() != nil {
			break
		}
	}
	return out, context.Cause(ctx)
}
