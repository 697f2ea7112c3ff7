#!/usr/bin/env bash
# Checks kuryr's Helm chart and kustomize base against the Kubernetes the
# local cloud runs (make up first): helm lint, then every value set of
# test/chart/*.yaml and the kustomize base rendered and validated by the API
# server itself (apply --dry-run=server --validate=strict: its OpenAPI
# schemas of that exact version, the CRDs' schemas, unknown fields
# refused). ServiceMonitor and PrometheusRule are checked against the
# Prometheus Operator's own CRDs (from its Go module, installed into the
# cluster if missing). A value set that must be refused names the error it
# expects in its first line: "# fails: <text>".
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO_ROOT/hack/local-cloud/lib.sh"
# shellcheck disable=SC1090
. "$CLOUD_ENV_FILE" # KUBECONFIG, and the cloud's kubectl first in PATH
helm=$(CACHE=$CLOUD_CACHE bash "$REPO_ROOT/hack/helm.sh")
kubectl=kubectl
chart=$REPO_ROOT/deploy/helm/kuryr
PROM_OPERATOR=${PROM_OPERATOR:-v0.85.0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$helm" lint --strict "$chart" --set openstack.cloudsYaml=x

# The Prometheus Operator's CRDs, for the monitoring objects.
if ! "$kubectl" get crd servicemonitors.monitoring.coreos.com prometheusrules.monitoring.coreos.com >/dev/null 2>&1; then
  dir=$(cd "$tmp" && go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROM_OPERATOR" | jq -r .Dir)
  "$kubectl" apply --server-side \
    -f "$dir/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml" \
    -f "$dir/example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml" >/dev/null
  "$kubectl" wait --for=condition=Established --timeout=60s \
    crd/servicemonitors.monitoring.coreos.com crd/prometheusrules.monitoring.coreos.com >/dev/null
fi

fail=0
for values in "$REPO_ROOT"/test/chart/*.yaml; do
  name=$(basename "$values" .yaml)
  want=$(sed -n '1s/^# fails: //p' "$values")
  if ! "$helm" template kuryr "$chart" --namespace kube-system --values "$values" >"$tmp/$name.yaml" 2>"$tmp/$name.err"; then
    if [ -n "$want" ] && grep -qF "$want" "$tmp/$name.err"; then
      echo "ok   $name: refused ($want)"
    else
      echo "FAIL $name: helm template: $(cat "$tmp/$name.err")"; fail=1
    fi
    continue
  fi
  [ -z "$want" ] || { echo "FAIL $name: rendered, but should fail with: $want"; fail=1; continue; }
  if "$kubectl" apply --dry-run=server --validate=strict --server-side --force-conflicts --field-manager=kuryr-chart-check \
      -f "$tmp/$name.yaml" >"$tmp/$name.out" 2>&1; then
    echo "ok   $name: $(grep -c '^kind:' "$tmp/$name.yaml") objects valid"
  else
    echo "FAIL $name: $(cat "$tmp/$name.out")"; fail=1
  fi
done
if "$kubectl" kustomize "$REPO_ROOT/deploy/base" >"$tmp/base.yaml" \
    && "$kubectl" apply --dry-run=server --validate=strict --server-side --force-conflicts --field-manager=kuryr-chart-check \
      -f "$tmp/base.yaml" >"$tmp/base.out" 2>&1; then
  echo "ok   deploy/base (kustomize): $(grep -c '^kind:' "$tmp/base.yaml") objects valid"
else
  echo "FAIL deploy/base (kustomize): $(cat "$tmp/base.out" 2>/dev/null)"; fail=1
fi
exit $fail
