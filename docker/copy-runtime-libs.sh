#!/usr/bin/env bash
# Used inside the Dockerfiles' build stages: installs BINARY under OUT/usr/local/bin and copies
# every shared library it loads (as ldd resolves them) under OUT, at the same paths. glibc and the
# C++ runtime are left to the runtime image, which has its own (same or newer), and so are the
# libraries matching $PROVIDED (a regex, e.g. 'libcudart|libnccl'). With $LIB_DIR set, libraries go
# flat into OUT/$LIB_DIR instead of their own paths (for a runtime image of another distribution).
# Usage: [PROVIDED=REGEX] [LIB_DIR=DIR] copy-runtime-libs.sh OUT BINARY...
set -euo pipefail
out=${1:?usage: copy-runtime-libs.sh OUT BINARY...}
shift
for binary in "$@"; do
  install -D -m 0755 "$binary" "$out/usr/local/bin/$(basename "$binary")"
  # Read whole before grep -q: under pipefail an early exit of grep can fail the producer.
  libs=$(ldd "$binary")
  if grep -q 'not found' <<<"$libs"; then
    echo "$libs" >&2
    echo "copy-runtime-libs: $binary has unresolved libraries" >&2
    exit 1
  fi
  awk '$2 == "=>" && $3 ~ /^\// { print $3 }' <<<"$libs" |
    grep -Ev '/(ld-linux[^/]*|libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)\.so' |
    grep -Ev "/(${PROVIDED:-^$})[^/]*$" |
    while read -r lib; do
      # Copy the file the link points to, under the link's name, so the loader finds it.
      if [[ -n "${LIB_DIR:-}" ]]; then
        install -D -m 0644 "$(readlink -f "$lib")" "$out$LIB_DIR/$(basename "$lib")"
      else
        # Under the directory's real path: /lib is a link to /usr/lib on Debian 12, and a COPY
        # must not replace that link with a directory.
        install -D -m 0644 "$(readlink -f "$lib")" "$out$(readlink -f "$(dirname "$lib")")/$(basename "$lib")"
      fi
    done
done
