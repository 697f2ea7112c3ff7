package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: the file holds the new content with its mode, its directory
// is made, and no temporary file is left beside it.
func TestWrite(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "sub", "f.json")
	for _, content := range []string{"old", "new"} {
		if err := Write(dst, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(dst)
	if err != nil || string(raw) != "new" {
		t.Fatalf("content %q, %v", raw, err)
	}
	if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(dst))
	if len(entries) != 1 {
		t.Errorf("left beside it: %v", entries)
	}
}
