# Sourced by tests/docker's scripts: the buildah command on the project's own image storage, as
# the array `buildah`. The storage is the machine's, like Go's and pip's caches, outside any
# checkout (RINGLEADER_CACHE_DIR, else ~/.cache/ringleader): the Debian bases made once (about
# 3 min) serve every clone's test runs after, and nothing in it depends on a checkout's files
# but what is named after their hash. overlay where the kernel lets root mount it (an image is
# then its layers, not a copy of its whole tree: the PyTorch images' checks take a seventh of
# the time), else vfs; each driver has its own storage, so a machine never mixes them.
buildah_dir="${RINGLEADER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ringleader}/buildah"

overlay_mounts() {
  local probe status=1
  probe=$(mktemp -d)
  mkdir "$probe/lower" "$probe/upper" "$probe/work" "$probe/merged"
  if mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" \
    "$probe/merged" 2>/dev/null; then
    umount "$probe/merged"
    status=0
  fi
  rm -rf "$probe"
  return "$status"
}

buildah_driver=${RINGLEADER_BUILDAH_DRIVER:-$(overlay_mounts && echo overlay || echo vfs)}
buildah=(buildah --root "$buildah_dir/$buildah_driver/storage" --runroot "$buildah_dir/$buildah_driver/run"
  --storage-driver "$buildah_driver")
