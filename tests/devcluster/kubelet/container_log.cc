// Container logs on disk: one file of output per container, one file of run start offsets.
#include "tests/devcluster/kubelet/container_log.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace ringleader::devcluster::kubelet {
namespace {

std::filesystem::path NotesPath(const std::filesystem::path& pod_dir, const std::string& container) {
  return ContainerRunNotesDir(pod_dir) / container;
}

// The byte offsets at which runs started, in order; {0} when nothing was noted.
std::vector<std::uintmax_t> RunStarts(const std::filesystem::path& pod_dir, const std::string& container) {
  std::vector<std::uintmax_t> starts;
  std::ifstream in(NotesPath(pod_dir, container));
  std::uintmax_t offset = 0;
  while (in >> offset) {
    starts.push_back(offset);
  }
  if (starts.empty()) {
    starts.push_back(0);
  }
  return starts;
}

}  // namespace

std::filesystem::path PodDirectory(const std::filesystem::path& root, const std::string& ns, const std::string& name,
                                   const std::string& uid) {
  return root / "pods" / (ns + "_" + name + "_" + uid);
}

std::filesystem::path ContainerLogPath(const std::filesystem::path& pod_dir, const std::string& container) {
  return pod_dir / "logs" / (container + ".log");
}

std::filesystem::path ContainerRunNotesDir(const std::filesystem::path& pod_dir) { return pod_dir / "log-starts"; }

void NoteContainerRunStart(const std::filesystem::path& pod_dir, const std::string& container) {
  std::error_code error;
  std::filesystem::create_directories(ContainerRunNotesDir(pod_dir), error);
  std::uintmax_t length = std::filesystem::file_size(ContainerLogPath(pod_dir, container), error);
  if (error) {
    length = 0;  // no output yet
  }
  std::ofstream out(NotesPath(pod_dir, container), std::ios::app);
  out << length << "\n";
  if (!out) {
    throw std::runtime_error("cannot write " + NotesPath(pod_dir, container).string());
  }
}

std::uintmax_t LastRunStart(const std::filesystem::path& pod_dir, const std::string& container) {
  return RunStarts(pod_dir, container).back();
}

std::string ReadContainerLogFrom(const std::filesystem::path& pod_dir, const std::string& container,
                                 std::uintmax_t& offset) {
  std::ifstream in(ContainerLogPath(pod_dir, container), std::ios::binary);
  if (!in) {
    return "";
  }
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  if (end < 0 || static_cast<std::uintmax_t>(end) <= offset) {
    return "";
  }
  std::string text(static_cast<std::size_t>(static_cast<std::uintmax_t>(end) - offset), '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  offset += text.size();
  return text;
}

std::string ReadContainerRun(const std::filesystem::path& pod_dir, const std::string& container, ContainerRun run) {
  const std::vector<std::uintmax_t> starts = RunStarts(pod_dir, container);
  if (run == ContainerRun::kBeforeLast && starts.size() < 2) {
    return "";
  }
  const std::size_t index = run == ContainerRun::kLast ? starts.size() - 1 : starts.size() - 2;
  std::ifstream in(ContainerLogPath(pod_dir, container), std::ios::binary);
  if (!in) {
    return "";
  }
  std::ostringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  const std::uintmax_t begin = std::min<std::uintmax_t>(starts[index], text.size());
  const std::uintmax_t end =
      index + 1 < starts.size() ? std::min<std::uintmax_t>(starts[index + 1], text.size()) : text.size();
  return begin < end ? text.substr(begin, end - begin) : "";
}

}  // namespace ringleader::devcluster::kubelet
