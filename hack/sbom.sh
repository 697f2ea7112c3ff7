#!/usr/bin/env bash
# hack/sbom.sh VERSION SOURCE CREATED BINARY...: an SPDX 2.3 SBOM (JSON) of
# the Go modules compiled into BINARY... (read from the binaries' own build
# information, `go version -m`, so it lists what is in them, not what
# go.mod mentions): the kuryr module, every dependency (replacements
# resolved) with its purl and go.sum hash, and the Go standard library.
set -euo pipefail
version=$1 source=$2 created=$3
shift 3
for b in "$@"; do go version -m -json "$b"; done | jq -s --arg v "$version" --arg src "$source" --arg created "$created" '
  # SPDX ids allow letters, digits, "." and "-": the other characters a
  # module path may hold ("-", "/", "_", "~") become "-" and their hex code,
  # so that distinct paths (a/b-c, a-b/c) get distinct ids.
  def id($n): "SPDXRef-Package-" + ($n | gsub("-"; "-2d") | gsub("/"; "-2f") | gsub("_"; "-5f") | gsub("~"; "-7e"));
  def pkg($name; $ver; $purl; $comment): {
    name: $name, SPDXID: id($name), versionInfo: $ver, supplier: "NOASSERTION",
    downloadLocation: "NOASSERTION", filesAnalyzed: false,
    licenseConcluded: "NOASSERTION", licenseDeclared: "NOASSERTION", copyrightText: "NOASSERTION",
    externalRefs: [{referenceCategory: "PACKAGE-MANAGER", referenceType: "purl", referenceLocator: $purl}]}
    + (if $comment then {comment: $comment} else {} end);
  (map(.Deps // []) | add | map(.Replace // .) | unique_by(.Path)) as $deps
  | (.[0].GoVersion) as $go
  | (.[0].Main.Path) as $main
  | {
      spdxVersion: "SPDX-2.3", dataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
      name: ("kuryr-" + $v),
      documentNamespace: ($src + "/releases/" + $v + "/kuryr.spdx.json"),
      creationInfo: {created: $created, creators: ["Tool: kuryr hack/sbom.sh", "Organization: kuryr"]},
      documentDescribes: [id($main)],
      packages: (
        [pkg($main; $v; "pkg:golang/\($main)@\($v)"; "the binaries kuryr-controller, kuryr-daemon, kuryr-cni") + {downloadLocation: $src}]
        + [pkg("golang.org/stdlib"; $go; "pkg:golang/stdlib@\($go)"; "the Go standard library and runtime")]
        + [$deps[] | pkg(.Path; .Version; "pkg:golang/\(.Path)@\(.Version)"; (if .Sum then "go.sum " + .Sum else null end))]),
      relationships: (
        [{spdxElementId: "SPDXRef-DOCUMENT", relationshipType: "DESCRIBES", relatedSpdxElement: id($main)},
         {spdxElementId: id($main), relationshipType: "DEPENDS_ON", relatedSpdxElement: id("golang.org/stdlib")}]
        + [$deps[] | {spdxElementId: id($main), relationshipType: "DEPENDS_ON", relatedSpdxElement: id(.Path)}])
    }'
