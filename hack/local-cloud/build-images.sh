#!/usr/bin/env bash
# Builds the container images the local cloud needs, without a registry or
# a container builder: each is an OCI image layout (one layer tarball, a
# config, a manifest, an index) packed into a tar that `ctr images import`
# accepts. Cached by content; rebuilt only when this script or the CoreDNS
# version changes.
#   pause    - a static C program that sleeps until signalled.
#   test-app - busybox (sh, ping, nc, httpd, ip...) and testapp (UDP, HTTPS
#              to the API server: test/e2e/testapp) with an HTTP server that
#              answers with the pod's hostname, as the default command.
#   coredns  - the static CoreDNS of build-coredns.sh (run that first), user
#              65532 (nonroot), no shell.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/oci.sh"

PAUSE_IMAGE=registry.k8s.io/pause:3.10
APP_IMAGE=kuryr.local/test-app:v1
COREDNS_IMAGE=kuryr.local/coredns:$COREDNS_VERSION
TESTAPP_SRC=$REPO_ROOT/test/e2e/testapp
stamp=$({ cat "$0" "$(dirname "$0")/oci.sh" "$TESTAPP_SRC"/*.go; echo "$COREDNS_VERSION"; } | sha256sum | cut -c1-16)
if [ -f "$IMAGES_DIR/$stamp.done" ]; then
  log "images: cached in $IMAGES_DIR"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$IMAGES_DIR"

# pause
mkdir -p "$work/pause-root"
cat >"$work/pause.c" <<'EOF'
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
static void stop(int s) { (void)s; _exit(0); }
static void reap(int s) { (void)s; while (waitpid(-1, NULL, WNOHANG) > 0) {} }
int main(void) {
  signal(SIGINT, stop); signal(SIGTERM, stop); signal(SIGCHLD, reap);
  for (;;) pause();
}
EOF
gcc -Os -static -o "$work/pause-root/pause" "$work/pause.c"
strip "$work/pause-root/pause"
oci_archive pause "$PAUSE_IMAGE" "$work/pause-root" \
  '{"Entrypoint":["/pause"],"Env":["PATH=/"]}' "$IMAGES_DIR/pause.tar"

# test-app
r=$work/app-root
mkdir -p "$r/bin" "$r/www" "$r/tmp" "$r/etc" "$r/proc" "$r/sys" "$r/dev" "$r/run"
cp /bin/busybox "$r/bin/busybox"
# testapp: what busybox cannot do (UDP both ways, HTTPS to the API server).
(cd "$REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$r/bin/testapp" ./test/e2e/testapp)
for a in $("$r/bin/busybox" --list); do
  [ "$a" = busybox ] || ln -sf busybox "$r/bin/$a"
done
echo 'root:x:0:0:root:/:/bin/sh' >"$r/etc/passwd"
echo 'root:x:0:' >"$r/etc/group"
cat >"$r/bin/serve" <<'EOF'
#!/bin/sh
# Default command: an HTTP server on $PORT (8080) answering with the pod's
# hostname, logging every client address (httpd -vv) to the container log.
# /healthz answers while /www/healthz exists (probes; tests remove it).
# A shell as PID 1 so SIGTERM ends the pod at once.
PORT=${PORT:-8080}
hostname >/www/index.html
echo ok >/www/healthz
httpd -f -vv -p "$PORT" -h /www &
trap 'kill $! 2>/dev/null; exit 0' TERM INT
wait
EOF
chmod +x "$r/bin/serve"
oci_archive test-app "$APP_IMAGE" "$r" \
  '{"Cmd":["/bin/serve"],"Env":["PATH=/bin"],"ExposedPorts":{"8080/tcp":{}}}' "$IMAGES_DIR/test-app.tar"

# coredns
[ -x "$COREDNS_BIN" ] || die "$COREDNS_BIN missing: run build-coredns.sh first"
r=$work/coredns-root
mkdir -p "$r/etc/coredns"
cp "$COREDNS_BIN" "$r/coredns"
echo 'nonroot:x:65532:65532:nonroot:/:/sbin/nologin' >"$r/etc/passwd"
echo 'nonroot:x:65532:' >"$r/etc/group"
oci_archive coredns "$COREDNS_IMAGE" "$r" \
  '{"Entrypoint":["/coredns"],"Cmd":["-conf","/etc/coredns/Corefile"],"User":"65532:65532",
    "ExposedPorts":{"53/udp":{},"53/tcp":{}}}' "$IMAGES_DIR/coredns.tar"

echo "$PAUSE_IMAGE" >"$IMAGES_DIR/pause.ref"
echo "$APP_IMAGE" >"$IMAGES_DIR/test-app.ref"
echo "$COREDNS_IMAGE" >"$IMAGES_DIR/coredns.ref"
rm -f "$IMAGES_DIR"/*.done
touch "$IMAGES_DIR/$stamp.done"
log "images: built $PAUSE_IMAGE, $APP_IMAGE and $COREDNS_IMAGE in $IMAGES_DIR"
