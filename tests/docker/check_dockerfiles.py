#!/usr/bin/env python3
"""Checks of docker/Dockerfile.* that need no container engine (build_images_test.sh builds them).

Usage: check_dockerfiles.py REPO_ROOT BUILD_DIR TARGET_FILE...
Every COPY source exists in the repository and is not in .dockerignore, or comes from an
earlier stage; every base image is pinned; the final stage runs as a non-root user; and every
ENTRYPOINT/CMD names a binary the CMake build makes (one of TARGET_FILE), built by the build
stage, whose files docker/stage-image-files.sh stages under the ENTRYPOINT's path (run here on
BUILD_DIR). A file a binary needs beside it (BESIDE, also among TARGET_FILE) is staged beside it.
Both ways to an image share one `runtime` stage: the last stage adds the build stage's /out/,
`--target prebuilt` the out/ of its own build context (files staged from binaries built before).
"""
import fnmatch
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

errors = []

# Files a binary finds in its own directory: the sidecar copies the NCCL profiler plugin from
# there into the trainers' volume (sidecar/contract/contract.h, kProfilerPluginFileName).
BESIDE = {"ringleader-sidecar": ["libnccl-profiler-ringleader.so"]}


def check(condition, message):
    """Records `message` unless `condition` holds; returns whether it held."""
    if not condition:
        errors.append(message)
    return bool(condition)


def instructions(path):
    """(lineno, INSTRUCTION, rest) with continuation lines joined and comments dropped."""
    out, buf, start = [], "", 0
    with open(path) as f:
        for n, line in enumerate(f, 1):
            stripped = line.strip()
            if not buf and (not stripped or stripped.startswith("#")):
                continue
            if not buf:
                start = n
            if stripped.startswith("#"):
                continue
            if stripped.endswith("\\"):
                buf += stripped[:-1] + " "
                continue
            buf += stripped
            word, _, rest = buf.partition(" ")
            out.append((start, word.upper(), rest.strip()))
            buf = ""
    return out


def ignored(rel, patterns):
    for p in patterns:
        if fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel.split("/")[0], p):
            return True
    return False


def check_staged(root, build_dir, kind, name, entry, binary):
    """Stages image `kind` from BUILD_DIR as the build stage would: the ENTRYPOINT and every file
    BESIDE it must be where the runtime stage's COPY of /out/ to / puts them."""
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run([os.path.join(root, "docker", "stage-image-files.sh"), kind, build_dir, out],
                             capture_output=True, text=True)
        if not check(run.returncode == 0, "%s: stage-image-files.sh %s failed: %s" % (name, kind, run.stderr.strip())):
            return
        check(os.access(out + entry, os.X_OK), "%s: %s is not staged as an executable" % (name, entry))
        for companion in BESIDE.get(binary, []):
            check(os.path.isfile(os.path.join(out + os.path.dirname(entry), companion)),
                  "%s: %s is not staged beside %s" % (name, companion, entry))


def main():
    root, build_dir, targets = sys.argv[1], sys.argv[2], sys.argv[3:]
    binaries = {os.path.basename(t): os.path.relpath(t, build_dir) for t in targets}
    for name, rel in binaries.items():
        check(os.path.exists(os.path.join(build_dir, rel)), "target %s is not built at %s" % (name, rel))
    for name, companions in BESIDE.items():
        for companion in companions:
            if not check(name in binaries and companion in binaries,
                         "%s and %s must both be given as TARGET_FILE" % (name, companion)):
                continue
            check(os.path.dirname(binaries[companion]) == os.path.dirname(binaries[name]),
                  "%s is built at %s, not beside %s (%s)" % (companion, binaries[companion], name, binaries[name]))
    with open(os.path.join(root, ".dockerignore")) as f:
        patterns = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    dockerfiles = sorted(glob.glob(os.path.join(root, "docker", "Dockerfile.*")))
    want = {"Dockerfile.operator", "Dockerfile.sidecar", "Dockerfile.sidecar-cpu", "Dockerfile.example-trainer"}
    check(want <= {os.path.basename(d) for d in dockerfiles}, "missing Dockerfiles: %s" % (want - {os.path.basename(d) for d in dockerfiles}))
    for path in dockerfiles:
        name = os.path.relpath(path, root)
        args, stages, user, entry, run_text = {}, [], None, None, ""
        # What each stage leaves to a stage built FROM it.
        inherited = {}
        for line, word, rest in instructions(path):
            where = "%s:%d" % (name, line)
            if word == "ARG":
                key, _, value = rest.partition("=")
                args[key] = value
            elif word == "FROM":
                m = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
                image = m.group(1)
                image = re.sub(r"\$\{(\w+)\}", lambda v: args.get(v.group(1), ""), image)
                if image in stages or image == "scratch":
                    pass  # an earlier stage, or nothing
                else:
                    tag = image.rsplit(":", 1)[1] if ":" in image.split("/")[-1] else ""
                    check(tag and tag != "latest" and re.search(r"\d", tag),
                          "%s: base %r is not pinned to a versioned tag" % (where, image))
                    check(not image.startswith("debian") or re.match(r"debian:(12(\.\d+)?|bookworm)", image),
                          "%s: Debian base %r is not bookworm (12)" % (where, image))
                if stages:
                    inherited[stages[-1]] = (user, entry)
                user, entry = inherited.get(image, (None, None))
                stages.append(m.group(2) or "")
                run_text = ""
            elif word == "COPY":
                parts = rest.split()
                flags = [p for p in parts if p.startswith("--")]
                paths = [p for p in parts if not p.startswith("--")]
                sources = paths[:-1]
                check(sources, "%s: COPY without a source" % where)
                source_stage = next((f.split("=", 1)[1] for f in flags if f.startswith("--from=")), None)
                if source_stage is not None:
                    check(source_stage in stages[:-1],
                          "%s: COPY --from=%s names no earlier stage" % (where, source_stage))
                    continue
                if stages[-1] == "prebuilt":
                    # Its build context is the directory stage-image-files.sh filled, not the repository.
                    check(paths == ["out/", "/"], "%s: prebuilt must only COPY out/ /" % where)
                    continue
                for src in sources:
                    rel = os.path.normpath(src).lstrip("/")
                    check(os.path.exists(os.path.join(root, rel)), "%s: COPY source %s does not exist" % (where, src))
                    check(rel == "." or not ignored(rel, patterns), "%s: COPY source %s is in .dockerignore" % (where, src))
            elif word == "RUN":
                run_text += " " + rest
            elif word == "USER":
                user = rest
            elif word in ("ENTRYPOINT", "CMD"):
                try:
                    value = json.loads(rest)
                except ValueError:
                    value = None
                check(isinstance(value, list) and value, "%s: %s must be in exec (JSON) form" % (where, word))
                if word == "ENTRYPOINT" and isinstance(value, list) and value:
                    entry = value[0]
        check(len(stages) >= 2, "%s: not a multi-stage build" % name)
        check(user and user.split(":")[0] not in ("0", "root"), "%s: the final stage must set a non-root USER" % name)
        binary = os.path.basename(entry or "")
        if check(binary in binaries, "%s: ENTRYPOINT %r is none of the built binaries %s" % (name, entry, sorted(binaries))):
            check(entry == "/usr/local/bin/" + binary,
                  "%s: ENTRYPOINT must be /usr/local/bin/%s, where copy-runtime-libs.sh installs it" % (name, binary))
        # Both ways to the image: the last stage from source, `prebuilt` from staged files, each
        # the runtime stage and one COPY.
        for stage in ("build", "runtime", "prebuilt"):
            check(stage in stages, "%s: no stage %s" % (name, stage))
        check(re.search(r"^FROM runtime AS prebuilt\nCOPY out/ /\n", open(path).read(), re.M),
              "%s: the prebuilt stage must be `FROM runtime AS prebuilt` and `COPY out/ /`" % name)
        check(re.search(r"^FROM runtime\n(#.*\n)*COPY --from=build /out/ /\n*\Z", open(path).read(), re.M),
              "%s: the last stage must be `FROM runtime` and `COPY --from=build /out/ /`" % name)
        # The build stage builds that target and stages this image's files from its build tree.
        kind = os.path.basename(path).split(".", 1)[1]
        build_text = open(path).read()
        check(re.search(r"--target\s+%s\b" % re.escape(binary), build_text),
              "%s: no `cmake --build ... --target %s`" % (name, binary))
        check(re.search(r"docker/stage-image-files\.sh %s build /out\b" % re.escape(kind), build_text),
              "%s: the build stage does not run docker/stage-image-files.sh %s build /out" % (name, kind))
        if binary in binaries:
            check_staged(root, build_dir, kind, name, entry, binary)
    for e in errors:
        print("docker: " + e, file=sys.stderr)
    print("docker: %d Dockerfiles, %d problems" % (len(dockerfiles), len(errors)))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
