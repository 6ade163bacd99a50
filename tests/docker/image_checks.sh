# Sourced by the tests that build docker/'s images (build_images_test.sh, gpu_sidecar_image_test.sh)
# after they set `test_name` and `build` (the CMake build dir): exits 77 (skipped) without root,
# buildah or debootstrap; else takes the buildah storage (buildah_storage.sh) for this run alone,
# sets `base` to tests/docker/debian_base.sh's Debian 12 and `work` to a scratch dir, and defines
# the build and the checks: `bud`, `run_in`, `ldd_resolves`, `train`, `check_image`. On exit it
# removes every container, the images `bud` made, the untagged ones and `work`.
if ((EUID != 0)) || ! command -v buildah >/dev/null || ! command -v debootstrap >/dev/null; then
  echo "$test_name: needs root, buildah and debootstrap (scripts/setup installs them); skipped"
  exit 77
fi
source "$top/tests/docker/buildah_storage.sh"
base=$("$top/tests/docker/debian_base.sh")
# The storage is one test's at a time (the bases aside): everything else in it is removed at the
# end, containers and images a killed run left included.
exec 8>"$buildah_dir/$buildah_driver.lock"
flock 8
mkdir -p "$build/tests/docker"
work=$(mktemp -d "$build/tests/docker/images.XXXXXX")
tag="test-$$"
images=()
cleanup() {
  # Every container goes, then the images no name holds.
  "${buildah[@]}" rm --all >/dev/null 2>&1 || true
  for i in "${images[@]}"; do "${buildah[@]}" rmi "$i" >/dev/null 2>&1 || true; done
  "${buildah[@]}" rmi --prune >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "$test_name: $*" >&2; exit 1; }

# bud NAME DOCKERFILE CONTEXT ARGS...: builds the image localhost/ringleader-ci/NAME:$tag.
bud() {
  local name=$1 file=$2 context=$3
  shift 3
  image_name="localhost/ringleader-ci/$name:$tag"
  "${buildah[@]}" bud --isolation chroot --pull=never --quiet --layers=false "$@" \
    -f "$file" -t "$image_name" "$context" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; fail "buildah bud $file ($name) failed"; }
  images+=("$image_name")
}

# run_in [OPTIONS] CONTAINER -- COMMAND...: runs COMMAND as the image's user, with its environment.
run_in() { "${buildah[@]}" run --isolation chroot "$@"; }

# ldd_resolves CONTAINER FILE: every library FILE loads is found inside the image; the list in `libs`.
ldd_resolves() {
  libs=$(run_in "$1" -- ldd "$2" 2>&1) || fail "ldd $2 failed in ${image_name}: $libs"
  ! grep -q 'not found' <<<"$libs" || fail "${image_name}: $2 has unresolved libraries:
$libs"
}

# train CONTAINER COMMAND...: COMMAND trains 2 steps as rank 0 of a world of one.
train() {
  local container=$1 port
  shift
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  output=$(run_in -e RANK=0 -e WORLD_SIZE=1 -e MASTER_ADDR=127.0.0.1 -e MASTER_PORT="$port" \
    "$container" -- "$@" --steps 2 --timeout-seconds 30 2>&1) || fail "$image_name: training failed: $output"
  grep -q '^final steps 2 ' <<<"$output" || fail "$image_name: no 'final steps 2' line: $output"
}

# check_image KIND: runs the checks on the image just built; KIND says which. Leaves the
# container in `container`, the entrypoint in `entry` and the entrypoint's libraries in `entry_libs`.
check_image() {
  local kind=$1 user
  container=$("${buildah[@]}" from --pull=never "$image_name")
  entry=$("${buildah[@]}" inspect --type image --format '{{range .OCIv1.Config.Entrypoint}}{{.}} {{end}}' "$image_name")
  entry=${entry% }
  entry_libs=
  user=$("${buildah[@]}" inspect --type image --format '{{.OCIv1.Config.User}}' "$image_name")
  [[ "$user" == 65532:65532 ]] || fail "$image_name runs as '$user', not 65532:65532"
  [[ "$(run_in "$container" -- id -u)" == 65532 ]] || fail "$image_name: its user is not uid 65532 inside"
  case "$kind" in
    pytorch-python)
      [[ "$entry" == "python /train.py" ]] || fail "$image_name: entrypoint '$entry'"
      train "$container" python /train.py
      ;;
    pytorch-torchrun)
      [[ "$entry" == "torchrun /train.py" ]] || fail "$image_name: entrypoint '$entry'"
      output=$(run_in "$container" -- torchrun --help 2>&1) || fail "$image_name: torchrun --help failed: $output"
      ;;
    example-trainer)
      ldd_resolves "$container" "$entry"
      entry_libs=$libs
      train "$container" "$entry"
      ;;
    *)
      ldd_resolves "$container" "$entry"
      entry_libs=$libs
      output=$(run_in "$container" -- "$entry" --help 2>&1) || fail "$image_name: $entry --help failed: $output"
      [[ -n "$output" ]] || fail "$image_name: $entry --help printed nothing"
      ;;
  esac
  if [[ "$kind" == sidecar* ]]; then
    ldd_resolves "$container" "$(dirname "$entry")/libnccl-profiler-ringleader.so"
  fi
  echo "$test_name: $image_name: $(grep -m 1 -E '^final|^usage|^ringleader-operator' <<<"$output")"
}
