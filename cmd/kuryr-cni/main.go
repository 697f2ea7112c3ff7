// Command kuryr-cni is the CNI plugin the container runtime executes. It
// holds no logic: it forwards the request to the node's kuryr-daemon over a
// root-only unix socket and prints the daemon's answer. Every failure is a
// CNI error object; a daemon that cannot be reached is "try again later".
package main

import (
	"fmt"
	"os"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/kuryr-k8s/kuryr/pkg/cni/api"
	"github.com/kuryr-k8s/kuryr/pkg/names"
	kuryrversion "github.com/kuryr-k8s/kuryr/pkg/version"
)

func main() {
	// The runtime runs it with CNI_* variables and no arguments; an
	// operator asks which build it is.
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-version") {
		fmt.Println(kuryrversion.Get().String(names.CNI))
		return
	}
	skel.PluginMainFuncs(skel.CNIFuncs{
		Add:    forward("ADD"),
		Del:    forward("DEL"),
		Check:  forward("CHECK"),
		GC:     forward("GC"),
		Status: forward("STATUS"),
	}, version.All, kuryrversion.Get().String(names.CNI)+": pods on Neutron ports")
}

// forward hands one CNI command, as skel read it from the environment and
// stdin, to api.Forward.
func forward(command string) func(*skel.CmdArgs) error {
	return func(a *skel.CmdArgs) error { return api.Forward(command, a, os.Stdout) }
}
