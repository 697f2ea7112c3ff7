package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kuryr-k8s/kuryr/pkg/cli/describe"
)

// completeTimeout bounds the listing a completion makes: a shell waits on it.
const completeTimeout = 5 * time.Second

// completeTargets completes describe's arguments: the kinds, then the
// names of that kind in the namespace (-n, else the context's), as
// KIND/NAME or KIND NAME.
func completeTargets(g *globals) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		var kind, prefix, joined string
		switch {
		case len(args) == 1 && !strings.Contains(args[0], "/"):
			kind, prefix = args[0], toComplete // describe svc <TAB>
		case len(args) == 0 && strings.Contains(toComplete, "/"):
			kind, prefix, _ = strings.Cut(toComplete, "/")
			joined = kind + "/"
		case len(args) == 0:
			return []string{"pod/", "svc/", "networkpolicy/"}, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
		default:
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		t, err := describe.ParseTarget([]string{kind + "/x"})
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completeTimeout)
		defer cancel()
		e, err := g.connect(ctx)
		var names []string
		if err == nil {
			names, err = listNames(ctx, e.Client, e.Namespace, t.Kind)
		}
		if err != nil {
			cobra.CompDebugln(err.Error(), false)
			return nil, cobra.ShellCompDirectiveError
		}
		var out []string
		for _, n := range names {
			if strings.HasPrefix(n, prefix) {
				out = append(out, joined+n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// listNames are the names of kind's objects in namespace ns (their
// metadata only).
func listNames(ctx context.Context, c client.Reader, ns, kind string) ([]string, error) {
	gvk := map[string]schema.GroupVersionKind{
		describe.KindPod:           corev1.SchemeGroupVersion.WithKind("PodList"),
		describe.KindService:       corev1.SchemeGroupVersion.WithKind("ServiceList"),
		describe.KindNetworkPolicy: networkingv1.SchemeGroupVersion.WithKind("NetworkPolicyList"),
	}[kind]
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk)
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list.Items))
	for _, o := range list.Items {
		out = append(out, o.Name)
	}
	return out, nil
}
