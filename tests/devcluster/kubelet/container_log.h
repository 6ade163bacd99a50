// Where devcluster's kubelet keeps a container's output, and which part each run of it wrote. Every
// run appends to one file, <pod dir>/logs/<container>.log, and the file's length when a run starts
// is noted in <pod dir>/log-starts/<container>, so the API server's pods/log can serve the current
// run or the one before it, as a real kubelet keeps one log per container instance.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace ringleader::devcluster::kubelet {

// <root>/pods/<namespace>_<name>_<uid>: a Pod's volumes and logs.
std::filesystem::path PodDirectory(const std::filesystem::path& root, const std::string& ns, const std::string& name,
                                   const std::string& uid);
std::filesystem::path ContainerLogPath(const std::filesystem::path& pod_dir, const std::string& container);
// The directory of run notes; it stays with the logs when the Pod's other files go.
std::filesystem::path ContainerRunNotesDir(const std::filesystem::path& pod_dir);

// Notes that a run of `container` starts now. Throws std::runtime_error naming the file.
void NoteContainerRunStart(const std::filesystem::path& pod_dir, const std::string& container);

// Where the last run's output starts in the container's log file (0 without notes).
std::uintmax_t LastRunStart(const std::filesystem::path& pod_dir, const std::string& container);
// The log file's bytes from `offset` to its current end; `offset` moves to that end. "" when
// there is no log or nothing new.
std::string ReadContainerLogFrom(const std::filesystem::path& pod_dir, const std::string& container,
                                 std::uintmax_t& offset);

enum class ContainerRun { kLast, kBeforeLast };
// What one run wrote: "" when there is no log or no such run. A log without notes is one run.
std::string ReadContainerRun(const std::filesystem::path& pod_dir, const std::string& container, ContainerRun run);

}  // namespace ringleader::devcluster::kubelet
