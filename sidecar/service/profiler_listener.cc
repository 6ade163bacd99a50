// The profiler socket's Asio event loop, and the plugin's atomic installation.
#include "sidecar/service/profiler_listener.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "sidecar/contract/contract.h"
#include "sidecar/rendezvous/accept_loop.h"

namespace ringleader::sidecar {
namespace {

namespace asio = boost::asio;
using local = asio::local::stream_protocol;
using boost::system::error_code;

// A snapshot of a few KiB arrives in one or two reads.
constexpr std::size_t kReadChunk = 16 * 1024;

std::string ErrnoText(int error) { return std::strerror(error); }

}  // namespace

std::string_view FrameRejectionName(FrameRejection reason) {
  switch (reason) {
    case FrameRejection::kBadHeader: return "bad_header";
    case FrameRejection::kTooLarge: return "too_large";
    case FrameRejection::kBadPayload: return "bad_payload";
    case FrameRejection::kTruncated: return "truncated";
    case FrameRejection::kTooManyConnections: return "too_many_connections";
    case FrameRejection::kStale: return "stale";
    case FrameRejection::kTableFull: return "table_full";
  }
  return "bad_payload";
}

class ProfilerListener::Core {
 public:
  Core(ProfilerListenerOptions options, SnapshotSink& sink)
      : options_(std::move(options)), sink_(sink), acceptor_(io_), accept_retry_(io_) {
    const std::string& path = options_.path;
    const auto fail = [&](const std::string& what) {
      throw std::runtime_error("profiler socket " + path + ": " + what);
    };
    if (path.empty() || path.size() >= sizeof(sockaddr_un::sun_path)) {
      fail("not a Unix socket path of 1 to " + std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
           " bytes");
    }
    // A socket file outlives its listener; an earlier sidecar's would make bind fail.
    struct stat existing {};
    if (::lstat(path.c_str(), &existing) == 0) {
      if (!S_ISSOCK(existing.st_mode)) {
        fail("exists and is not a socket");
      }
      if (::unlink(path.c_str()) != 0) {
        fail("cannot remove the stale socket: " + ErrnoText(errno));
      }
    }
    error_code ec;
    if (acceptor_.open(local(), ec); ec) {
      fail("cannot open a socket: " + ec.message());
    }
    if (acceptor_.bind(local::endpoint(path), ec); ec) {
      fail("cannot bind: " + ec.message());
    }
    // Trainers may run as another uid than the sidecar.
    if (::chmod(path.c_str(), 0666) != 0) {
      const int error = errno;
      ::unlink(path.c_str());
      fail("cannot chmod 0666: " + ErrnoText(error));
    }
    if (acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec) {
      ::unlink(path.c_str());
      fail("cannot listen: " + ec.message());
    }
    Accept();
    thread_ = std::thread([this] { io_.run(); });
  }

  ~Core() { Stop(); }

  const std::string& path() const { return options_.path; }
  std::size_t open() const { return open_.load(); }

  void Stop() {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    if (!thread_.joinable()) {
      return;
    }
    asio::post(io_, [this] { Shutdown(); });
    thread_.join();
    ::unlink(options_.path.c_str());
  }

 private:
  class Connection;

  void Accept() {
    rendezvous::AcceptUntilStopped(acceptor_, accept_retry_, stopping_,
                                   [this](local::socket socket) { OnAccepted(std::move(socket)); });
  }

  void OnAccepted(local::socket socket);

  // Calls the sink; false when it threw (the caller then closes the connection).
  template <typename Call>
  bool Deliver(Call&& call) {
    try {
      call();
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  void Reject(FrameRejection reason) {
    Deliver([&] { sink_.OnRejected(reason); });
  }

  void OnClosed(std::uint64_t id) {
    if (connections_.erase(id) == 0) {
      return;
    }
    open_.store(connections_.size());
    Deliver([&] { sink_.OnConnectionClosed(id); });
  }

  void Shutdown();

  const ProfilerListenerOptions options_;
  SnapshotSink& sink_;
  asio::io_context io_;
  local::acceptor acceptor_;
  asio::steady_timer accept_retry_;
  bool stopping_ = false;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, std::shared_ptr<Connection>> connections_;
  std::atomic<std::size_t> open_{0};
  std::mutex stop_mutex_;
  std::thread thread_;
};

class ProfilerListener::Core::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Core& core, local::socket socket, std::uint64_t id)
      : core_(core),
        socket_(std::move(socket)),
        id_(id),
        decoder_(core.options_.max_payload_bytes) {}

  void Read() {
    socket_.async_read_some(asio::buffer(buffer_),
                            [self = shared_from_this()](const error_code& ec, std::size_t n) {
                              self->OnRead(ec, n);
                            });
  }

  // Closes the socket without telling the sink (the listener is stopping).
  void Abandon() {
    error_code ignored;
    socket_.close(ignored);
  }

 private:
  void OnRead(const error_code& ec, std::size_t n) {
    if (core_.stopping_ || ec == asio::error::operation_aborted) {
      return;
    }
    if (ec) {
      // EOF or a reset: the plugin went away, or gave up on a frame it could not finish.
      if (fed_ != taken_ && !decoder_.failed()) {
        core_.Reject(FrameRejection::kTruncated);
      }
      Close();
      return;
    }
    fed_ += n;
    decoder_.Feed(std::string_view(buffer_.data(), n));
    while (std::optional<std::string> payload = decoder_.Next()) {
      taken_ += profiler::kHeaderBytes + payload->size();
      const profiler::Decoded<profiler::Snapshot> snapshot = profiler::DecodeSnapshot(*payload);
      if (!snapshot.ok()) {
        core_.Reject(FrameRejection::kBadPayload);
        Close();
        return;
      }
      if (!core_.Deliver([&] { core_.sink_.OnSnapshot(id_, *snapshot.value); })) {
        Close();
        return;
      }
    }
    if (decoder_.failed()) {
      core_.Reject(decoder_.error().starts_with("header.length") ? FrameRejection::kTooLarge
                                                                 : FrameRejection::kBadHeader);
      Close();
      return;
    }
    Read();
  }

  void Close() {
    Abandon();
    core_.OnClosed(id_);  // drops the core's reference; the running handler holds another
  }

  Core& core_;
  local::socket socket_;
  const std::uint64_t id_;
  profiler::SnapshotFrameDecoder decoder_;
  std::array<char, kReadChunk> buffer_{};
  std::uint64_t fed_ = 0;    // bytes read
  std::uint64_t taken_ = 0;  // bytes of the whole frames taken from the decoder
};

void ProfilerListener::Core::OnAccepted(local::socket socket) {
  if (connections_.size() >= options_.max_connections) {
    error_code ignored;
    socket.close(ignored);
    Reject(FrameRejection::kTooManyConnections);
    return;
  }
  const std::uint64_t id = next_id_++;
  auto connection = std::make_shared<Connection>(*this, std::move(socket), id);
  connections_.emplace(id, connection);
  open_.store(connections_.size());
  connection->Read();
}

void ProfilerListener::Core::Shutdown() {
  stopping_ = true;
  error_code ignored;
  acceptor_.close(ignored);
  accept_retry_.cancel();
  for (auto& [id, connection] : connections_) {
    connection->Abandon();
  }
  connections_.clear();
  open_.store(0);
}

ProfilerListener::ProfilerListener(ProfilerListenerOptions options, SnapshotSink& sink)
    : core_(std::make_unique<Core>(std::move(options), sink)) {}

ProfilerListener::~ProfilerListener() { core_->Stop(); }

const std::string& ProfilerListener::path() const { return core_->path(); }

std::size_t ProfilerListener::OpenConnectionsForTest() const { return core_->open(); }

std::string ProfilerPluginSource() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return std::string(contract::kProfilerPluginFileName);
  }
  return (exe.parent_path() / contract::kProfilerPluginFileName).string();
}

std::optional<std::string> InstallProfilerPlugin(const std::string& source,
                                                 const std::string& directory) {
  const int in = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    return source + ": cannot read: " + ErrnoText(errno);
  }
  const std::string target = directory + "/" + std::string(contract::kProfilerPluginFileName);
  std::string temp = directory + "/." + std::string(contract::kProfilerPluginFileName) + ".XXXXXX";
  const int out = ::mkostemp(temp.data(), O_CLOEXEC);
  if (out < 0) {
    const int error = errno;
    ::close(in);
    return directory + ": cannot create a file: " + ErrnoText(error);
  }
  std::optional<std::string> failure;
  std::array<char, 64 * 1024> buffer{};
  for (;;) {
    const ssize_t got = ::read(in, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      failure = source + ": cannot read: " + ErrnoText(errno);
      break;
    }
    if (got == 0) {
      break;
    }
    for (ssize_t written = 0; written < got && !failure;) {
      const ssize_t n =
          ::write(out, buffer.data() + written, static_cast<std::size_t>(got - written));
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        failure = temp + ": cannot write: " + ErrnoText(errno);
        break;
      }
      written += n;
    }
    if (failure) {
      break;
    }
  }
  ::close(in);
  if (!failure && ::fchmod(out, 0755) != 0) {
    failure = temp + ": cannot chmod 0755: " + ErrnoText(errno);
  }
  if (::close(out) != 0 && !failure) {
    failure = temp + ": cannot write: " + ErrnoText(errno);
  }
  if (!failure && ::rename(temp.c_str(), target.c_str()) != 0) {
    failure = target + ": cannot rename into place: " + ErrnoText(errno);
  }
  if (failure) {
    ::unlink(temp.c_str());
  }
  return failure;
}

}  // namespace ringleader::sidecar
