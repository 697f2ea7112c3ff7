package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kuryr-k8s/kuryr/pkg/atomicfile"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// Install puts kuryr-cni into the node's CNI binary directory and then the
// network configuration into its configuration directory, each atomically
// (write, then rename): the runtime reloads the configuration on every file
// event and must never read half a file, and the node is reported network
// ready only once both exist, i.e. once this daemon can serve it.
func Install(binary, binDir, confDir, socket, cniVersion string) error {
	if err := copyAtomic(binary, filepath.Join(binDir, names.CNI), 0o755); err != nil {
		return fmt.Errorf("install kuryr-cni: %w", err)
	}
	conf := map[string]any{
		"cniVersion": cniVersion,
		"name":       "kuryr",
		"plugins":    []any{map[string]any{"type": names.CNI, "daemon_socket": socket}},
	}
	raw, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(confDir, "10-kuryr.conflist"), raw, 0o644)
}

func copyAtomic(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	raw, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	return atomicfile.Write(dst, raw, mode)
}
