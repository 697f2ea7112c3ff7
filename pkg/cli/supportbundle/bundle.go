// Package supportbundle is `kubectl kuryr supportbundle`: one archive with
// what it takes to debug kuryr from outside the cluster, both sides: the
// Kubernetes objects kuryr reads and writes (its own, nodes, pods,
// Services, policies, Events, its workloads and configuration), kuryr's
// logs (the previous container's too), each node's attachments as its
// kuryr-daemon sees them (pods' OVS interfaces or VM nodes' records), the
// Neutron and Octavia objects tagged for the cluster, and doctor's
// findings. Secrets never enter it: the credentials Secret is not read
// into it, and every file is redacted (passwords, secrets, tokens) before
// it is written. A part that cannot be collected is named in errors.txt;
// the rest is still written.
package supportbundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/kuryr-k8s/kuryr/pkg/cli/env"
	"github.com/kuryr-k8s/kuryr/pkg/names"
)

// Options are supportbundle's flags.
type Options struct {
	Output string        // the .tar.gz to write
	Since  time.Duration // logs since then (0: all)
}

// bundle is the archive's files, by path, before redaction.
type bundle struct {
	files  map[string][]byte
	errors []string
}

func (b *bundle) add(path string, data []byte) { b.files[path] = data }

func (b *bundle) fail(part string, err error) {
	b.errors = append(b.errors, fmt.Sprintf("%s: %v", part, err))
}

// Run collects the bundle and writes it to o.Output; it returns how many
// files it holds and what could not be collected.
func Run(ctx context.Context, e *env.Env, o Options) (files int, missing []string, err error) {
	b := &bundle{files: map[string][]byte{}}
	collectKube(ctx, e, b)
	collectLogs(ctx, e, o.Since, b)
	collectNodes(ctx, e, b)
	collectOpenStack(ctx, e, b)
	collectDoctor(ctx, e, b)
	if len(b.errors) > 0 {
		b.add("errors.txt", []byte(joinLines(b.errors)))
	}
	b.add("README.txt", []byte(readme(time.Now())))
	if err := b.write(o.Output); err != nil {
		return 0, b.errors, err
	}
	return len(b.files), b.errors, nil
}

// write redacts every file and writes the archive (to a temporary name,
// renamed at the end: an interrupted run leaves no half archive).
func (b *bundle) write(path string) error {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	paths := make([]string, 0, len(b.files))
	for p := range b.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	now := time.Now()
	for _, p := range paths {
		data := Redact(b.files[p])
		if err := tw.WriteHeader(&tar.Header{Name: names.SupportBundle + "/" + p, Mode: 0o600, Size: int64(len(data)), ModTime: now}); err != nil {
			return fmt.Errorf("archive %s: %w", p, err)
		}
		if _, err := tw.Write(data); err != nil {
			return fmt.Errorf("archive %s: %w", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return writeFile(path, &buf)
}

func writeFile(path string, r io.Reader) error {
	tmp := path + ".partial"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadArchive returns the files of an archive Run wrote, by their path in
// it (for tests and tools that check a bundle).
func ReadArchive(path string) (map[string]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	gz, err := gzip.NewReader(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, h.Name, err)
		}
		out[strings.TrimPrefix(h.Name, names.SupportBundle+"/")] = string(b)
	}
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	return b.String()
}

func readme(at time.Time) string {
	return `kuryr support bundle, collected ` + at.UTC().Format(time.RFC3339) + ` by kubectl kuryr supportbundle.

kubernetes/   kuryr's objects (KuryrPorts, KuryrNetworks, KuryrLoadBalancers, KuryrNetworkPolicies),
              nodes, pods, Services, EndpointSlices, NetworkPolicies, Events, kuryr's workloads and
              kuryr.conf (the credentials Secret is not included)
logs/         kuryr-controller and kuryr-daemon containers (previous instances as *.previous.log)
nodes/        each node's attachments as its kuryr-daemon records them (kuryr-daemon attachments)
openstack/    the Neutron and Octavia objects tagged for the cluster, as JSON
doctor.txt    kubectl kuryr doctor's findings
errors.txt    what could not be collected, if anything

Every file was redacted before it was written: values of passwords, secrets, tokens and
application credential secrets are replaced by REDACTED.
`
}
