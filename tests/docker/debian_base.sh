#!/usr/bin/env bash
# The Debian 12 base CI builds docker/'s images on, in place of debian:12.9 and debian:12.9-slim,
# which no registry here can serve: debootstrap's minbase from the Debian archive this machine's
# apt uses (scripts/setup's debian_archive_uri), made once and kept as a tarball beside the
# buildah storage (buildah_storage.sh: the machine's cache, outside the checkout), imported into
# it when missing. Prints the image's name.
# Cold: about 75 s; warm: nothing.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
source "$top/tests/docker/buildah_storage.sh"
dir=$buildah_dir
image=localhost/ringleader-ci/debian:12-minbase
tarball="$dir/debian-12-minbase.tar.gz"
mkdir -p "$dir"

# One maker at a time: two test runs may share the storage.
exec 9>"$dir/base.lock"
flock 9

if ! [[ -s "$tarball" ]]; then
  # The archive URI comes from scripts/setup's reading of /etc/apt, never from this repository.
  uri=$(bash -c 'source <(sed -n "/^debian_archive_uri() {/,/^}/p" "$1/scripts/setup"); debian_archive_uri' _ "$top")
  root=$(mktemp -d "$dir/debootstrap.XXXXXX")
  trap 'rm -rf "$root"' EXIT
  echo "debian_base: debootstrap --variant=minbase bookworm from $uri (once)" >&2
  debootstrap --variant=minbase bookworm "$root" "$uri" >"$dir/debootstrap.log" 2>&1 ||
    { tail -n 20 "$dir/debootstrap.log" >&2; echo "debian_base: debootstrap failed ($dir/debootstrap.log)" >&2; exit 1; }
  rm -rf "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/*_Packages
  tar --numeric-owner -C "$root" -c . | gzip -1 >"$tarball.tmp"
  mv "$tarball.tmp" "$tarball"
fi

if ! "${buildah[@]}" inspect --type image "$image" >/dev/null 2>&1; then
  container=$("${buildah[@]}" from scratch)
  "${buildah[@]}" add "$container" "$tarball" / >/dev/null
  "${buildah[@]}" config --cmd /bin/bash "$container"
  "${buildah[@]}" commit -q "$container" "$image" >/dev/null
  "${buildah[@]}" rm "$container" >/dev/null
fi
echo "$image"
