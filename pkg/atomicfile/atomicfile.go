// Package atomicfile writes a file so that a reader (or a reboot) finds
// the old content or the new, never a part: a temporary dot-name beside
// it, synced, renamed over it, the directory synced.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces dst with data (the directory made if missing). The
// temporary file is ".<name>.tmp": readers that skip dot-names (the CNI
// runtime, the attachment records) never take it for a file of theirs.
func Write(dst string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+filepath.Base(dst)+".tmp")
	if err := writeSynced(tmp, data, mode); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func writeSynced(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}
