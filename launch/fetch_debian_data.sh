#!/bin/sh
# Unpacks the Debian-packaged datasets the specs name into .data/debian of this checkout, without
# root (apt-get download + dpkg -x), where shared/data/resolver.py looks for them. Each package is
# pinned and checked against its SHA-256. Idempotent; `make env` runs it. Without apt-get it says
# so and exits 0: the loaders then name this script when their data is asked for.
set -eu
cd "$(dirname "$0")/.."
DEST=.data/debian
PACKAGES="
dataset-fashion-mnist 0.0~git20200523.55506a9-1 39e172fe32dd318ebb3e512220c3beea2fa47d7e20bab348fb4e0922d6beefc0
r-cran-dslabs 0.7.4-1 c3f93382c44d4581de9561792a87b110cb239c70771cac5ad63fa0a259e71ef3
"
if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
  echo "fetch_debian_data: no apt-get/dpkg here; Fashion-MNIST and MovieLens stay absent" >&2
  exit 0
fi
mkdir -p "$DEST/debs"
echo "$PACKAGES" | while read -r name version sha; do
  [ -n "$name" ] || continue
  [ -f "$DEST/debs/$name.unpacked" ] && continue
  deb="$DEST/debs/${name}_${version}_all.deb"
  if [ ! -f "$deb" ]; then
    (cd "$DEST/debs" && apt-get download -q "$name=$version")
    mv "$DEST/debs/${name}_"*"_all.deb" "$deb" 2>/dev/null || true
  fi
  echo "$sha  $deb" | sha256sum -c --quiet - || { rm -f "$deb"; exit 1; }
  dpkg -x "$deb" "$DEST"
  touch "$DEST/debs/$name.unpacked"
  echo "fetch_debian_data: $name $version -> $DEST"
done
