#!/usr/bin/env bash
# Refresh the graph layout library that `dt docs` ships (dtcli/ui/site/assets/vendor/dagre/):
# @dagrejs/dagre's browser build, unchanged, with its licence and that of the graphlib it
# bundles. The files are committed, so a clone needs neither npm nor a network; run this only
# to move to another release, then look at a generated site (tests/browser) before committing.
#   scripts/vendor_dagre.sh 3.1.3
set -euo pipefail
version="${1:?usage: scripts/vendor_dagre.sh DAGRE_VERSION}"
cd "$(dirname "$0")/.."
dest=dtcli/ui/site/assets/vendor/dagre
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "@dagrejs/dagre@$version" > /dev/null && tar xzf dagrejs-dagre-*.tgz)
graphlib="$(node -p "require('$work/package/package.json').dependencies['@dagrejs/graphlib']")"
(cd "$work" && mkdir g && npm pack --silent "@dagrejs/graphlib@$graphlib" > /dev/null && tar xzf dagrejs-graphlib-*.tgz -C g)
cp "$work/package/dist/dagre.min.js" "$dest/dagre.min.js"
cp "$work/package/LICENSE" "$dest/LICENSE"
cp "$work/g/package/LICENSE" "$dest/LICENSE.graphlib"
cat > "$dest/VERSION" <<TEXT
@dagrejs/dagre $version, from the npm registry (dist/dagre.min.js, unchanged; it bundles
@dagrejs/graphlib $graphlib). Both MIT: LICENSE and LICENSE.graphlib beside this file.
sha256 $(sha256sum "$dest/dagre.min.js" | cut -d' ' -f1)  dagre.min.js
Refresh with scripts/vendor_dagre.sh VERSION.
TEXT
cat "$dest/VERSION"
