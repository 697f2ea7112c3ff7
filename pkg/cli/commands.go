package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kuryr-k8s/kuryr/pkg/cli/check"
	"github.com/kuryr-k8s/kuryr/pkg/cli/describe"
	"github.com/kuryr-k8s/kuryr/pkg/cli/doctor"
	"github.com/kuryr-k8s/kuryr/pkg/version"
)

func describeCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "describe (pod|svc|networkpolicy)/NAME | KIND NAME",
		Short: "Show what kuryr made of a pod, Service or NetworkPolicy: Kubernetes, OpenStack and the node",
		Long: `describe shows one object with everything kuryr made of it:

  pod            its KuryrPort, each VIF's Neutron port (status, binding, addresses, security
                 groups) and, for a hypervisor node, how the node's kuryr-daemon plugged it
  svc            its KuryrLoadBalancer, the Octavia load balancer, listeners, pools and
                 members against the Service's endpoints, floating IP
  networkpolicy  its KuryrNetworkPolicy, the security groups and rules it became, and the
                 pods it selects`,
		Example: `  kubectl kuryr describe pod/web -n demo
  kubectl kuryr describe pod/web -n demo -o jsonpath='{range .ports[*]}{.id} {.status}{"\n"}{end}'
  kubectl kuryr describe svc db -n demo -o yaml
  kubectl kuryr describe networkpolicy/allow-web -n demo -o jsonpath='{.securityGroupId}'`,
		Aliases:           []string{"desc"},
		ValidArgsFunction: completeTargets(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := describe.ParseTarget(args); err != nil {
				return usageError{err}
			}
			e, f, err := g.prepare(cmd.Context())
			if err != nil {
				return err
			}
			return describe.Run(cmd.Context(), e, args, f, cmd.OutOrStdout())
		},
	}
}

func doctorCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check a kuryr installation, both sides: Kubernetes and OpenStack",
		Long: `doctor checks the controller and its leader, a daemon on every node, the CRDs, the
configuration, OpenStack (reachable, the credential's permissions, quota headroom, the objects
kuryr.conf names), what pods admit from the cloud's networks, leaked OpenStack objects, pods
without a port and kuryr's resources that are not Ready. Each check is one line: OK, WARN or
FAIL. It exits 1 if any check failed.`,
		Example: `  kubectl kuryr doctor
  kubectl kuryr doctor -o json --set neutron.region_name=RegionTwo
  kubectl kuryr doctor -o jsonpath='{range [?(@.status=="FAIL")]}{.check}: {.message}{"\n"}{end}'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, f, err := g.prepare(cmd.Context())
			if err != nil {
				return err
			}
			failed, err := doctor.Run(cmd.Context(), e, f, cmd.OutOrStdout())
			if err == nil && failed {
				err = errFailed
			}
			return err
		},
	}
}

func checkCommand(g *globals) *cobra.Command {
	o := check.Options{}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check the cluster's networking end to end with probe pods, then clean up",
		Long: `check makes a namespace kuryr-check-<5 random characters> with a probe pod (busybox's
httpd, as nobody) on each of two Ready nodes that take ordinary pods, and checks, as a workload meets them: node → pod
(the kubelets' readiness probes), pod ↔ pod across the two nodes, pod → a ClusterIP Service
over both pods, the cluster DNS resolving that Service, and a NetworkPolicy denying all ingress
to one pod, then admitting the other. The namespace is deleted at the end (also on Ctrl-C)
unless --keep. It exits 1 if a step failed.

The user needs to create namespaces, pods, Services and NetworkPolicies and to exec into pods;
the image needs sh, httpd, nc and nslookup (busybox).`,
		Example: `  kubectl kuryr check
  kubectl kuryr check --image registry.example.com/mirror/busybox:1.37 --timeout 5m
  kubectl kuryr check --keep -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, f, err := g.prepare(cmd.Context())
			if err != nil {
				return err
			}
			findings, err := check.Run(cmd.Context(), e, o)
			// Interrupted too: what was found, and the cleanup.
			return printFindings(cmd, f, findings, err)
		},
	}
	cmd.Flags().StringVar(&o.Image, "image", check.DefaultImage, "image of the probe pods (sh, httpd, nc, nslookup)")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 3*time.Minute,
		"how long each step may take (pods Ready, the Service answering, the policy in force)")
	cmd.Flags().BoolVar(&o.Keep, "keep", false, "keep the namespace for inspection")
	return cmd
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), version.Get().String("kubectl-kuryr"))
			return err
		},
	}
}

// noArgs refuses arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.Name(), args)}
	}
	return nil
}
