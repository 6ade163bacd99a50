// The profiler plugin's test harness (plugin_harness.h).
#include "tests/sidecar/profiler/plugin_harness.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace ringleader::profiler::testing {
namespace {

std::mutex g_log_mutex;
std::condition_variable g_log_changed;
std::vector<std::string> g_log;

}  // namespace

std::string BuiltPluginPath() { return RINGLEADER_PROFILER_PLUGIN_PATH; }

std::unique_ptr<LoadedPlugin> LoadedPlugin::Load(const std::string& path, std::string* error) {
  std::unique_ptr<PluginLibrary> library = PluginLibrary::Open(path, error);
  if (library == nullptr) {
    return nullptr;
  }
  if (library->v4() == nullptr || library->v5() == nullptr) {
    *error = "ncclProfiler_v4 or ncclProfiler_v5 missing or incomplete in " + path;
    return nullptr;
  }
  return std::unique_ptr<LoadedPlugin>(new LoadedPlugin(std::move(library)));
}

// ---- SnapshotServer ----

SnapshotServer::SnapshotServer(std::string path) : path_(std::move(path)) {
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (listen_fd_ < 0 || path_.size() >= sizeof(address.sun_path)) {
    throw std::runtime_error("snapshot server: cannot make a socket for " + path_);
  }
  std::memcpy(address.sun_path, path_.data(), path_.size());
  unlink(path_.c_str());
  if (bind(listen_fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listen_fd_, 64) != 0) {
    throw std::runtime_error("snapshot server: cannot listen on " + path_ + ": " +
                             std::strerror(errno));
  }
  wake_fd_ = eventfd(0, EFD_CLOEXEC);
  thread_ = std::thread([this] { Serve(); });
}

SnapshotServer::~SnapshotServer() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = write(wake_fd_, &one, sizeof(one));
  thread_.join();
  close(wake_fd_);
  close(listen_fd_);
  unlink(path_.c_str());
}

void SnapshotServer::Serve() {
  struct Connection {
    int fd;
    SnapshotFrameDecoder decoder;
  };
  std::vector<std::unique_ptr<Connection>> connections;
  std::vector<char> chunk(1 << 16);
  for (;;) {
    std::vector<pollfd> fds = {{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (const auto& connection : connections) {
      fds.push_back({connection->fd, POLLIN, 0});
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      continue;
    }
    if (fds[0].revents != 0) {
      break;
    }
    if ((fds[1].revents & POLLIN) != 0) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        connections.push_back(std::make_unique<Connection>(Connection{fd, SnapshotFrameDecoder()}));
        std::lock_guard lock(mutex_);
        ++connections_;
        ++version_;
        changed_.notify_all();
      }
    }
    for (std::size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) {
        continue;
      }
      Connection& connection = *connections[i - 2];
      const ssize_t n = read(connection.fd, chunk.data(), chunk.size());
      if (n > 0) {
        connection.decoder.Feed(std::string_view(chunk.data(), static_cast<std::size_t>(n)));
      }
      std::lock_guard lock(mutex_);
      while (auto payload = connection.decoder.Next()) {
        pending_.push_back(std::move(*payload));
      }
      if (connection.decoder.failed()) {
        frame_errors_.push_back(connection.decoder.error());
      }
      if (n <= 0 || connection.decoder.failed()) {
        close(connection.fd);
        connection.fd = -1;
      }
      ++version_;
      changed_.notify_all();
    }
    std::erase_if(connections, [](const auto& connection) { return connection->fd < 0; });
  }
  for (const auto& connection : connections) {
    close(connection->fd);
  }
}

void SnapshotServer::DecodePending() {
  std::vector<std::string> payloads;
  std::vector<std::string> frame_errors;
  std::size_t connections = 0;
  {
    std::lock_guard lock(mutex_);
    payloads.swap(pending_);
    frame_errors.swap(frame_errors_);
    connections = connections_;
  }
  for (std::string& payload : payloads) {
    Decoded<Snapshot> decoded = DecodeSnapshot(payload);
    if (!decoded.ok()) {
      received_.errors.push_back(decoded.error);
      continue;
    }
    for (const Communicator& comm : decoded.value->communicators) {
      received_.latest[{comm.info.comm_hash, comm.info.rank}] = comm;
    }
    received_.snapshots.push_back(std::move(*decoded.value));
  }
  for (std::string& error : frame_errors) {
    received_.errors.push_back(std::move(error));
  }
  received_.connections = connections;
}

bool SnapshotServer::WaitFor(const std::function<bool(const Received&)>& predicate,
                             std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::lock_guard caller(caller_mutex_);
  for (;;) {
    std::uint64_t seen = 0;
    {
      std::lock_guard lock(mutex_);
      seen = version_;
    }
    DecodePending();
    if (predicate(received_)) {
      return true;
    }
    std::unique_lock lock(mutex_);
    if (!changed_.wait_until(lock, deadline, [&] { return version_ != seen; })) {
      lock.unlock();
      DecodePending();
      return predicate(received_);
    }
  }
}

Received SnapshotServer::Get() {
  std::lock_guard caller(caller_mutex_);
  DecodePending();
  return received_;
}

// ---- TempDir ----

TempDir::TempDir() {
  char pattern[] = "/tmp/rl-prof-XXXXXX";
  if (mkdtemp(pattern) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

// ---- The captured log ----

void CaptureLog(int /*level*/, unsigned long /*flags*/, const char* /*file*/, int /*line*/,
                const char* fmt, ...) {
  char line[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(line, sizeof(line), fmt, args);
  va_end(args);
  std::lock_guard lock(g_log_mutex);
  g_log.emplace_back(line);
  g_log_changed.notify_all();
}

bool WaitForLog(const std::string& text, std::chrono::milliseconds timeout) {
  std::unique_lock lock(g_log_mutex);
  return g_log_changed.wait_for(lock, timeout, [&] {
    for (const std::string& line : g_log) {
      if (line.find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  });
}

std::vector<std::string> CapturedLog() {
  std::lock_guard lock(g_log_mutex);
  return g_log;
}

void ClearCapturedLog() {
  std::lock_guard lock(g_log_mutex);
  g_log.clear();
}

}  // namespace ringleader::profiler::testing
