// The profiler socket over a real Unix socket: snapshots from many connections reach the sink,
// bad bytes close only their own connection and are counted, caps hold, stale sockets go; and the
// plugin's atomic installation.
#include "sidecar/service/profiler_listener.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sidecar/contract/contract.h"
#include "tests/support/test_environment.h"

namespace ringleader::sidecar {
namespace {

using std::chrono::milliseconds;

class RecordingSink : public SnapshotSink {
 public:
  void OnSnapshot(std::uint64_t connection, const profiler::Snapshot& snapshot) override {
    Change([&] { snapshots_.emplace_back(connection, snapshot); });
  }
  void OnConnectionClosed(std::uint64_t connection) override {
    Change([&] { closed_.push_back(connection); });
  }
  void OnRejected(FrameRejection reason) override {
    Change([&] { ++rejected_[reason]; });
  }

  // Waits until `predicate` holds (under the lock); false after 10 s.
  bool WaitFor(const std::function<bool()>& predicate) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(10), predicate);
  }
  std::size_t snapshots() {
    std::lock_guard<std::mutex> lock(mutex_);
    return snapshots_.size();
  }
  std::vector<std::pair<std::uint64_t, profiler::Snapshot>> all_snapshots() {
    std::lock_guard<std::mutex> lock(mutex_);
    return snapshots_;
  }
  int rejected(FrameRejection reason) {
    std::lock_guard<std::mutex> lock(mutex_);
    return rejected_[reason];
  }
  std::size_t closed() {
    std::lock_guard<std::mutex> lock(mutex_);
    return closed_.size();
  }

  // Unlocked views for WaitFor's predicates.
  std::vector<std::pair<std::uint64_t, profiler::Snapshot>> snapshots_;
  std::vector<std::uint64_t> closed_;
  std::map<FrameRejection, int> rejected_;

 private:
  template <typename F>
  void Change(F&& change) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      change();
    }
    changed_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable changed_;
};

// A plain client, as the plugin is: connect, write bytes, close.
class Client {
 public:
  explicit Client(const std::string& path) : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
    connected_ = ::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~Client() { Close(); }
  bool connected() const { return connected_; }
  bool Write(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        return false;
      }
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // True once the listener closed its end: a read sees end of file, or fails with a real error
  // (a reset). False when `timeout` passes first (a read that timed out is no close), and when
  // a byte arrives (the listener never writes).
  bool WaitClosedByPeer(milliseconds timeout = std::chrono::seconds(10)) {
    timeval limit{static_cast<time_t>(timeout.count() / 1000),
                  static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    char byte = 0;
    for (;;) {
      const ssize_t n = ::recv(fd_, &byte, 1, 0);
      if (n >= 0) {
        return n == 0;
      }
      if (errno != EINTR) {
        return errno != EAGAIN && errno != EWOULDBLOCK;
      }
    }
  }
  void Close() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

 private:
  int fd_;
  bool connected_ = false;
};

profiler::Snapshot MakeSnapshot(std::uint32_t pid, std::uint64_t sequence) {
  profiler::Snapshot snapshot;
  snapshot.header.pid = pid;
  snapshot.header.process_start_ns = 42;
  snapshot.header.sequence = sequence;
  profiler::Communicator comm;
  comm.info.comm_hash = 7;
  comm.info.nranks = 2;
  comm.info.name = "world";
  profiler::Cell cell;
  cell.op = profiler::Op::kAllReduce;
  cell.bucket = 20;
  cell.calls = sequence;
  cell.bytes = sequence << 20;
  comm.cells.push_back(cell);
  snapshot.communicators.push_back(comm);
  return snapshot;
}

std::string Frame(std::uint32_t pid, std::uint64_t sequence) {
  return profiler::EncodeSnapshotFrame(MakeSnapshot(pid, sequence)).value();
}

class ProfilerListenerTest : public ::testing::Test {
 protected:
  ProfilerListenerTest() : dir_(testing::MakeTempDir("rl-profiler")), path_((dir_ / "p.sock").string()) {}
  ~ProfilerListenerTest() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::unique_ptr<ProfilerListener> Listen(std::size_t max_connections = 256,
                                           std::size_t max_payload = std::size_t{4} << 20) {
    return std::make_unique<ProfilerListener>(
        ProfilerListenerOptions{path_, max_connections, max_payload}, sink_);
  }

  std::filesystem::path dir_;
  std::string path_;
  RecordingSink sink_;
};

TEST_F(ProfilerListenerTest, SnapshotsFromManyConnectionsReachTheSinkWhole) {
  auto listener = Listen();
  std::vector<std::unique_ptr<Client>> clients;
  for (std::uint32_t pid = 1; pid <= 8; ++pid) {
    clients.push_back(std::make_unique<Client>(path_));
    ASSERT_TRUE(clients.back()->connected());
  }
  for (std::uint64_t sequence = 1; sequence <= 3; ++sequence) {
    for (std::uint32_t pid = 1; pid <= 8; ++pid) {
      ASSERT_TRUE(clients[pid - 1]->Write(Frame(pid, sequence)));
    }
  }
  // One more, a byte at a time.
  const std::string frame = Frame(1, 4);
  for (const char byte : frame) {
    ASSERT_TRUE(clients[0]->Write(std::string_view(&byte, 1)));
  }
  ASSERT_TRUE(sink_.WaitFor([&] { return sink_.snapshots_.size() == 25; }));
  std::map<std::uint32_t, std::uint64_t> last_sequence;
  std::map<std::uint32_t, std::uint64_t> connection_of;
  for (const auto& [connection, snapshot] : sink_.all_snapshots()) {
    const std::uint32_t pid = snapshot.header.pid;
    EXPECT_EQ(snapshot, MakeSnapshot(pid, snapshot.header.sequence));
    EXPECT_EQ(snapshot.header.sequence, last_sequence[pid] + 1) << "in order per connection";
    last_sequence[pid] = snapshot.header.sequence;
    if (connection_of.contains(pid)) {
      EXPECT_EQ(connection_of[pid], connection);
    }
    connection_of[pid] = connection;
  }
  EXPECT_EQ(connection_of.size(), 8u);
  EXPECT_EQ(listener->OpenConnectionsForTest(), 8u);
  clients.clear();
  ASSERT_TRUE(sink_.WaitFor([&] { return sink_.closed_.size() == 8; }));
  EXPECT_EQ(listener->OpenConnectionsForTest(), 0u);
  EXPECT_EQ(sink_.rejected(FrameRejection::kTruncated), 0);
}

TEST_F(ProfilerListenerTest, TheSocketIsOpenToEveryUidAndRemovedOnStop) {
  auto listener = Listen();
  struct stat info {};
  ASSERT_EQ(::stat(path_.c_str(), &info), 0);
  EXPECT_TRUE(S_ISSOCK(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0666u);
  listener.reset();
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(ProfilerListenerTest, AStaleSocketIsReplacedAndAnyOtherFileRefused) {
  {
    // A socket file left behind by a sidecar that died: bound, never unlinked.
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path_.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
    ::close(fd);
  }
  ASSERT_TRUE(std::filesystem::exists(path_));
  {
    auto listener = Listen();
    Client client(path_);
    ASSERT_TRUE(client.connected());
    ASSERT_TRUE(client.Write(Frame(1, 1)));
    ASSERT_TRUE(sink_.WaitFor([&] { return sink_.snapshots_.size() == 1; }));
  }
  std::ofstream(path_) << "not a socket";
  try {
    Listen();
    FAIL() << "listened over a regular file";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), "profiler socket " + path_ + ": exists and is not a socket");
  }
  EXPECT_TRUE(std::filesystem::is_regular_file(path_));
  const std::string long_path = "/tmp/" + std::string(120, 'x');
  EXPECT_THROW(ProfilerListener({long_path, 1, 1}, sink_), std::runtime_error);
}

TEST_F(ProfilerListenerTest, BadBytesCloseOnlyTheirConnectionAndAreCounted) {
  auto listener = Listen(256, 64 * 1024);
  Client good(path_);
  ASSERT_TRUE(good.Write(Frame(1, 1)));

  Client bad_magic(path_);
  ASSERT_TRUE(bad_magic.Write("GET / HTTP/1.1\r\n\r\n"));
  EXPECT_TRUE(bad_magic.WaitClosedByPeer());

  // A header announcing 1 MiB, over this listener's 64 KiB: refused from the header alone.
  std::string huge = Frame(2, 1).substr(0, profiler::kHeaderBytes);
  huge[8] = 0;
  huge[9] = 0x10;
  huge[10] = 0;
  huge[11] = 0;
  Client too_large(path_);
  ASSERT_TRUE(too_large.Write(huge));
  EXPECT_TRUE(too_large.WaitClosedByPeer());

  // A well-framed payload that does not decode: a cell whose timed_calls exceed its calls.
  profiler::Snapshot snapshot = MakeSnapshot(3, 1);
  snapshot.communicators[0].cells[0].timed_calls = 99;
  Client bad_payload(path_);
  ASSERT_TRUE(bad_payload.Write(profiler::EncodeSnapshotFrame(snapshot).value()));
  EXPECT_TRUE(bad_payload.WaitClosedByPeer());

  // Half a frame, then the writer gives up.
  {
    Client truncated(path_);
    const std::string frame = Frame(4, 1);
    ASSERT_TRUE(truncated.Write(std::string_view(frame).substr(0, frame.size() / 2)));
  }

  ASSERT_TRUE(sink_.WaitFor([&] {
    return sink_.rejected_[FrameRejection::kBadHeader] == 1 &&
           sink_.rejected_[FrameRejection::kTooLarge] == 1 &&
           sink_.rejected_[FrameRejection::kBadPayload] == 1 &&
           sink_.rejected_[FrameRejection::kTruncated] == 1;
  }));
  // The good connection is untouched and still served.
  EXPECT_FALSE(good.WaitClosedByPeer(milliseconds(200)));
  ASSERT_TRUE(good.Write(Frame(1, 2)));
  ASSERT_TRUE(sink_.WaitFor([&] { return sink_.snapshots_.size() == 2; }));
  for (const auto& [connection, received] : sink_.all_snapshots()) {
    EXPECT_EQ(received.header.pid, 1u);
  }
}

TEST_F(ProfilerListenerTest, ConnectionsBeyondTheCapAreClosedAndCounted) {
  auto listener = Listen(/*max_connections=*/2);
  Client first(path_);
  Client second(path_);
  ASSERT_TRUE(first.Write(Frame(1, 1)));
  ASSERT_TRUE(second.Write(Frame(2, 1)));
  ASSERT_TRUE(sink_.WaitFor([&] { return sink_.snapshots_.size() == 2; }));
  Client third(path_);
  EXPECT_TRUE(third.WaitClosedByPeer());
  ASSERT_TRUE(sink_.WaitFor([&] { return sink_.rejected_[FrameRejection::kTooManyConnections] == 1; }));
  // A slot freed is a slot taken.
  first.Close();
  ASSERT_TRUE(sink_.WaitFor([&] { return sink_.closed_.size() == 1; }));
  Client fourth(path_);
  ASSERT_TRUE(fourth.Write(Frame(4, 1)));
  ASSERT_TRUE(sink_.WaitFor([&] { return sink_.snapshots_.size() == 3; }));
}

TEST_F(ProfilerListenerTest, ASinkThatThrowsClosesOnlyThatConnection) {
  class ThrowingSink : public RecordingSink {
   public:
    void OnSnapshot(std::uint64_t connection, const profiler::Snapshot& snapshot) override {
      if (snapshot.header.pid == 666) {
        throw std::runtime_error("boom");
      }
      RecordingSink::OnSnapshot(connection, snapshot);
    }
  } sink;
  ProfilerListener listener({path_, 256, 1 << 20}, sink);
  Client thrower(path_);
  ASSERT_TRUE(thrower.Write(Frame(666, 1)));
  EXPECT_TRUE(thrower.WaitClosedByPeer());
  Client fine(path_);
  ASSERT_TRUE(fine.Write(Frame(1, 1)));
  ASSERT_TRUE(sink.WaitFor([&] { return sink.snapshots_.size() == 1; }));
}

class InstallProfilerPluginTest : public ::testing::Test {
 protected:
  InstallProfilerPluginTest() : dir_(testing::MakeTempDir("rl-plugin-install")) {
    std::filesystem::create_directories(dir_ / "image");
    std::filesystem::create_directories(dir_ / "volume");
    std::ofstream(source()) << std::string(200'000, 'p');
  }
  ~InstallProfilerPluginTest() override {
    std::error_code ignored;
    std::filesystem::permissions(dir_ / "volume", std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ignored);
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string source() const { return (dir_ / "image" / "plugin.so").string(); }
  std::filesystem::path target() const {
    return dir_ / "volume" / std::string(contract::kProfilerPluginFileName);
  }

  std::filesystem::path dir_;
};

std::string ReadAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_F(InstallProfilerPluginTest, CopiesWholeWithMode0755AndLeavesNoTemporaryFile) {
  std::ofstream(target()) << "an older plugin";
  EXPECT_EQ(InstallProfilerPlugin(source(), (dir_ / "volume").string()), std::nullopt);
  EXPECT_EQ(ReadAll(target()), std::string(200'000, 'p'));
  struct stat info {};
  ASSERT_EQ(::stat(target().c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0755u);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir_ / "volume")) {
    names.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{std::string(contract::kProfilerPluginFileName)});
}

TEST_F(InstallProfilerPluginTest, NamesWhatFailedWhenTheSourceIsMissingOrTheDirectoryIsNot) {
  const std::string missing = (dir_ / "image" / "nothing.so").string();
  EXPECT_EQ(InstallProfilerPlugin(missing, (dir_ / "volume").string()),
            missing + ": cannot read: No such file or directory");
  const std::string absent_dir = (dir_ / "no-such-dir").string();
  EXPECT_EQ(InstallProfilerPlugin(source(), absent_dir),
            absent_dir + ": cannot create a file: No such file or directory");
  EXPECT_FALSE(std::filesystem::exists(target()));
}

TEST(ProfilerPluginSourceTest, IsBesideTheRunningExecutable) {
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
  EXPECT_EQ(ProfilerPluginSource(),
            (exe.parent_path() / std::string(contract::kProfilerPluginFileName)).string());
}

}  // namespace
}  // namespace ringleader::sidecar
