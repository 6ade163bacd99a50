// ContainerProcess with real processes: exit codes, Terminate's grace, the process group dying,
// log capture, exact env, start errors, the unprivileged fallback and (as root) mounts, hosts
// file and network namespace.
#include "tests/devcluster/kubelet/container_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ringleader::devcluster::kubelet {
namespace {

using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("rl-ctr-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteFile(const std::filesystem::path& path, const std::string& content) { std::ofstream(path) << content; }

template <typename Condition>
bool WaitUntil(Condition condition, std::chrono::milliseconds timeout = 2s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// Gone, or a zombie waiting for whoever inherited it.
bool ProcessGone(pid_t pid) {
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = stat.rfind(") ");
  return stat.empty() || close == std::string::npos || stat[close + 2] == 'Z';
}

ContainerOptions Shell(const std::string& script, const std::filesystem::path& log) {
  ContainerOptions options;
  options.spec.program = "/bin/sh";
  options.spec.args = {"-c", script};
  options.spec.env = {{"PATH", "/usr/bin:/bin"}};
  options.log = log;
  return options;
}

// A mount path that does not exist on the host yet, removed again by the test.
std::string FreshMountPath(const std::string& tag) { return "/var/run/rltest-" + std::to_string(getpid()) + "-" + tag; }

void RemoveCreatedMountPoints(const ContainerProcess& process) {
  const auto& created = process.CreatedMountPoints();
  for (auto it = created.rbegin(); it != created.rend(); ++it) {
    std::error_code ignored;
    std::filesystem::remove(*it, ignored);
  }
}

bool Isolated() { return ContainerIsolationSupported(nullptr); }

TEST(ContainerProcessTest, ReportsTheExitStatus) {
  TempDir dir;
  ContainerProcess process(Shell("exit 3", dir.path() / "log"));
  EXPECT_GT(process.pid(), 0);
  EXPECT_EQ(process.Wait(2s), 3);
  EXPECT_FALSE(process.Running());
  EXPECT_EQ(process.ExitCode(), 3);
}

TEST(ContainerProcessTest, RunsUntilTerminatedAndReportsTheSignal) {
  TempDir dir;
  ContainerProcess process(Shell("exec sleep 30", dir.path() / "log"));
  EXPECT_TRUE(process.Running());
  EXPECT_EQ(process.ExitCode(), std::nullopt);
  process.Terminate(2s);
  EXPECT_FALSE(process.Running());
  EXPECT_EQ(process.ExitCode(), 128 + SIGTERM);
}

TEST(ContainerProcessTest, IgnoredSigtermGetsSigkillAfterTheGrace) {
  TempDir dir;
  const std::filesystem::path log = dir.path() / "log";
  ContainerProcess process(Shell("trap '' TERM; echo ready; exec sleep 30", log));
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(log) == "ready\n"; }));
  const auto start = std::chrono::steady_clock::now();
  process.Terminate(200ms);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  EXPECT_EQ(process.ExitCode(), 137);
}

TEST(ContainerProcessTest, TerminateKillsTheWholeProcessGroup) {
  TempDir dir;
  const std::filesystem::path log = dir.path() / "log";
  const std::filesystem::path pid_file = dir.path() / "grandchild";
  // The grandchild ignores SIGTERM, so only the group's SIGKILL after the main exit ends it.
  ContainerProcess process(
      Shell("(trap '' TERM; exec sleep 30) & echo $! > " + pid_file.string() + "; echo ready; wait", log));
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(log) == "ready\n"; }));
  const pid_t grandchild = std::stoi(ReadFile(pid_file));
  EXPECT_FALSE(ProcessGone(grandchild));
  process.Terminate(1s);
  EXPECT_EQ(process.ExitCode(), 128 + SIGTERM);
  EXPECT_TRUE(WaitUntil([&] { return ProcessGone(grandchild); }));
}

TEST(ContainerProcessTest, StragglersDieWhenTheMainProcessExits) {
  TempDir dir;
  const std::filesystem::path pid_file = dir.path() / "grandchild";
  ContainerProcess process(Shell("(trap '' TERM; exec sleep 30) & echo $! > " + pid_file.string(), dir.path() / "log"));
  EXPECT_EQ(process.Wait(2s), 0);
  const pid_t grandchild = std::stoi(ReadFile(pid_file));
  EXPECT_TRUE(WaitUntil([&] { return ProcessGone(grandchild); }));
}

TEST(ContainerProcessTest, DestructorKillsAndReaps) {
  TempDir dir;
  pid_t pid = 0;
  {
    ContainerProcess process(Shell("exec sleep 30", dir.path() / "log"));
    pid = process.pid();
  }
  EXPECT_TRUE(ProcessGone(pid));
  EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(pid)));  // reaped, not a zombie
}

// Regression guard: containers run in their own session, so without a parent-death signal they
// would outlive a devcluster killed with SIGKILL.
TEST(ContainerProcessTest, AContainerDiesWithTheProcessThatStartedIt) {
  TempDir dir;
  const std::filesystem::path pid_file = dir.path() / "pid";
  const pid_t launcher = fork();
  if (launcher == 0) {
    // A stand-in for devcluster: starts a container, then dies (_exit runs no destructor).
    const ContainerProcess process(Shell("echo $$ > " + pid_file.string() + "; exec sleep 30", dir.path() / "log"));
    for (int i = 0; i < 200 && ReadFile(pid_file).empty(); ++i) {
      usleep(10000);
    }
    _exit(0);
  }
  ASSERT_GT(launcher, 0);
  int status = 0;
  ASSERT_EQ(waitpid(launcher, &status, 0), launcher);
  pid_t container = 0;
  std::istringstream(ReadFile(pid_file)) >> container;
  ASSERT_GT(container, 0);
  EXPECT_TRUE(WaitUntil([&] { return ProcessGone(container); }))
      << "container " << container << " outlived its launcher";
}

TEST(ContainerProcessTest, LogCapturesStdoutAndStderrAndAppends) {
  TempDir dir;
  const std::filesystem::path log = dir.path() / "log";
  for (int run = 0; run < 2; ++run) {
    ContainerProcess process(Shell("echo out; echo err >&2", log));
    ASSERT_EQ(process.Wait(2s), 0);
    if (run == 1) {
      EXPECT_EQ(process.LogTail(4), "err\n");
      EXPECT_EQ(process.LogTail(1000), "out\nerr\nout\nerr\n");
    }
  }
  EXPECT_EQ(ReadFile(log), "out\nerr\nout\nerr\n");
}

TEST(ContainerProcessTest, ExecsWithExactlyTheSpecEnvInTheWorkingDir) {
  TempDir dir;
  ContainerOptions options;
  options.spec.program = "/usr/bin/env";
  options.spec.env = {{"A", "1"}, {"B", "two words"}};
  options.log = dir.path() / "env.log";
  ContainerProcess env(options);
  ASSERT_EQ(env.Wait(2s), 0);
  EXPECT_EQ(ReadFile(options.log), "A=1\nB=two words\n");

  options.spec.program = "/bin/pwd";
  options.spec.working_dir = dir.path().string();
  options.log = dir.path() / "pwd.log";
  ContainerProcess pwd(options);
  ASSERT_EQ(pwd.Wait(2s), 0);
  EXPECT_EQ(ReadFile(options.log), dir.path().string() + "\n");
}

TEST(ContainerProcessTest, StartsWithDefaultSignalsAndNoInheritedDescriptors) {
  TempDir dir;
  // What a server's kubelet thread might have: SIGPIPE ignored, SIGTERM blocked, an fd without
  // O_CLOEXEC from another thread.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction saved {};
  sigaction(SIGPIPE, &ignore, &saved);
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigset_t saved_mask;
  pthread_sigmask(SIG_BLOCK, &term, &saved_mask);
  // High, so that no fd the container's program opens itself can take the number.
  const int opened = open("/dev/null", O_RDONLY);
  const int stray = fcntl(opened, F_DUPFD, 100);
  close(opened);
  ASSERT_GE(stray, 100);

  ContainerOptions options;
  options.spec.program = "/bin/cat";
  options.spec.args = {"/proc/self/status"};
  options.log = dir.path() / "status";
  ContainerProcess status(options);
  const std::optional<int> status_code = status.Wait(2s);
  options.spec.program = "/bin/ls";
  options.spec.args = {"/proc/self/fd/" + std::to_string(stray)};
  options.log = dir.path() / "fd";
  ContainerProcess fd(options);
  const std::optional<int> fd_code = fd.Wait(2s);

  close(stray);
  pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  sigaction(SIGPIPE, &saved, nullptr);
  ASSERT_EQ(status_code, 0);
  const std::string text = ReadFile(dir.path() / "status");
  EXPECT_NE(text.find("SigIgn:\t0000000000000000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("SigBlk:\t0000000000000000\n"), std::string::npos) << text;
  EXPECT_NE(fd_code, 0) << "fd " << stray << " leaked into the container";
}

TEST(ContainerProcessTest, StartFailuresNameTheStep) {
  TempDir dir;
  ContainerOptions options = Shell("true", dir.path() / "log");
  options.spec.program = "/nonexistent/program";
  try {
    ContainerProcess process(options);
    ADD_FAILURE() << "started a missing program";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("exec /nonexistent/program"), std::string::npos) << error.what();
  }
  options = Shell("true", dir.path() / "log");
  options.spec.working_dir = "/nonexistent/dir";
  try {
    ContainerProcess process(options);
    ADD_FAILURE() << "started in a missing working dir";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("chdir to /nonexistent/dir"), std::string::npos) << error.what();
  }
  options = Shell("true", dir.path() / "missing-dir" / "log");
  EXPECT_THROW(ContainerProcess process(options), std::runtime_error);
}

TEST(ContainerProcessTest, FallbackRewritesMountPathsToHostDirs) {
  TempDir dir;
  WriteFile(dir.path() / "x", "hello");
  const std::string mount_path = FreshMountPath("fallback");
  ContainerOptions options = Shell("cat \"$DATA\"; cat $0", dir.path() / "log");
  options.isolation = Isolation::kNone;
  options.spec.args.push_back(mount_path + "/x");  // $0 of the script
  options.spec.env["DATA"] = mount_path + "/x";
  options.spec.mounts = {Mount{.host = dir.path(), .path = mount_path, .read_only = true}};
  options.netns = "ignored-without-isolation";
  ContainerProcess process(options);
  EXPECT_FALSE(process.isolated());
  ASSERT_EQ(process.Wait(2s), 0) << process.LogTail(1000);
  EXPECT_EQ(ReadFile(options.log), "hellohello");
  EXPECT_FALSE(std::filesystem::exists(mount_path));
}

TEST(ContainerProcessIsolationTest, BindMountIsVisibleInsideOnly) {
  if (!Isolated()) {
    GTEST_SKIP() << "needs root with mount namespaces";
  }
  TempDir dir;
  WriteFile(dir.path() / "x", "hello");
  const std::string mount_path = FreshMountPath("bind");
  ContainerOptions options = Shell("cat " + mount_path + "/x", dir.path() / "log");
  options.spec.mounts = {Mount{.host = dir.path(), .path = mount_path}};
  ContainerProcess process(options);
  EXPECT_TRUE(process.isolated());
  EXPECT_EQ(process.Wait(2s), 0);
  EXPECT_EQ(process.LogTail(100), "hello");
  // The mount point was made on the host, but the mount stayed inside.
  EXPECT_EQ(process.CreatedMountPoints(), std::vector<std::filesystem::path>{mount_path});
  EXPECT_TRUE(std::filesystem::is_directory(mount_path));
  EXPECT_FALSE(std::filesystem::exists(mount_path + "/x"));
  RemoveCreatedMountPoints(process);
  EXPECT_FALSE(std::filesystem::exists(mount_path));
}

TEST(ContainerProcessIsolationTest, ReadOnlyMountRefusesWrites) {
  if (!Isolated()) {
    GTEST_SKIP() << "needs root with mount namespaces";
  }
  TempDir dir;
  const std::string mount_path = FreshMountPath("ro");
  ContainerOptions options = Shell("echo hi > " + mount_path + "/y", dir.path() / "log");
  options.spec.mounts = {Mount{.host = dir.path(), .path = mount_path, .read_only = true}};
  ContainerProcess process(options);
  EXPECT_NE(process.Wait(2s), 0);
  EXPECT_NE(process.LogTail(1000).find("Read-only file system"), std::string::npos) << process.LogTail(1000);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "y"));
  RemoveCreatedMountPoints(process);
}

TEST(ContainerProcessIsolationTest, NestedMountPointIsMadeInTheEnclosingVolume) {
  if (!Isolated()) {
    GTEST_SKIP() << "needs root with mount namespaces";
  }
  TempDir outer;
  TempDir inner;
  WriteFile(inner.path() / "f", "inner");
  const std::string mount_path = FreshMountPath("nested");
  ContainerOptions options = Shell("cat " + mount_path + "/sub/f", outer.path() / "log");
  // Listed child first: mounts are applied parents first whatever the order.
  options.spec.mounts = {Mount{.host = inner.path(), .path = mount_path + "/sub"},
                         Mount{.host = outer.path(), .path = mount_path}};
  ContainerProcess process(options);
  EXPECT_EQ(process.Wait(2s), 0) << process.LogTail(1000);
  EXPECT_EQ(process.LogTail(100), "inner");
  EXPECT_TRUE(std::filesystem::is_directory(outer.path() / "sub"));
  RemoveCreatedMountPoints(process);
}

TEST(ContainerProcessIsolationTest, HostsFileReplacesEtcHostsInsideOnly) {
  if (!Isolated()) {
    GTEST_SKIP() << "needs root with mount namespaces";
  }
  TempDir dir;
  WriteFile(dir.path() / "hosts", "10.244.0.9 rl-peer-0\n");
  const std::string host_hosts = ReadFile("/etc/hosts");
  ContainerOptions options = Shell("cat /etc/hosts", dir.path() / "log");
  options.hosts_file = dir.path() / "hosts";
  ContainerProcess process(options);
  EXPECT_EQ(process.Wait(2s), 0);
  EXPECT_EQ(process.LogTail(1000), "10.244.0.9 rl-peer-0\n");
  EXPECT_EQ(ReadFile("/etc/hosts"), host_hosts);
}

// The chart's operator mounts an emptyDir on /tmp while devcluster's data dir, where every
// volume's source and the hosts file live, was under /tmp: binding by path then found nothing.
TEST(ContainerProcessIsolationTest, AVolumeOverTheSourcesDirectoryHidesNoOtherMount) {
  if (!Isolated()) {
    GTEST_SKIP() << "needs root with mount namespaces";
  }
  TempDir scratch;
  TempDir sources;
  WriteFile(sources.path() / "hosts", "10.244.0.9 rl-peer-0\n");
  WriteFile(sources.path() / "f", "volume");
  // The top directory the sources are under ("/tmp"), covered by the first mount.
  const std::filesystem::path top = *std::next(sources.path().begin());
  const std::string mount_path = FreshMountPath("hidden");
  ContainerOptions options = Shell("cat /etc/hosts " + mount_path + "/f", scratch.path() / "log");
  options.spec.mounts = {Mount{.host = scratch.path(), .path = "/" + top.string()},
                         Mount{.host = sources.path(), .path = mount_path}};
  options.hosts_file = sources.path() / "hosts";
  ContainerProcess process(options);
  EXPECT_EQ(process.Wait(2s), 0) << process.LogTail(1000);
  EXPECT_EQ(process.LogTail(1000), "10.244.0.9 rl-peer-0\nvolume");
  RemoveCreatedMountPoints(process);
}

// The same volume over a checkout under /tmp: the program itself (a built binary in that
// checkout) is hidden once the volume is mounted, and still runs.
TEST(ContainerProcessIsolationTest, AVolumeOverTheProgramsDirectoryStillRunsTheProgram) {
  if (!Isolated()) {
    GTEST_SKIP() << "needs root with mount namespaces";
  }
  TempDir scratch;
  TempDir checkout;
  const std::filesystem::path program = checkout.path() / "echo";
  std::filesystem::copy_file("/bin/echo", program);
  const std::filesystem::path top = *std::next(checkout.path().begin());
  ContainerOptions options;
  options.spec.program = program;
  options.spec.args = {"ran from a hidden path"};
  options.spec.mounts = {Mount{.host = scratch.path(), .path = "/" + top.string()}};
  options.log = scratch.path() / "log";
  ContainerProcess process(options);
  EXPECT_EQ(process.Wait(2s), 0) << process.LogTail(1000);
  EXPECT_EQ(process.LogTail(1000), "ran from a hidden path\n");
  RemoveCreatedMountPoints(process);
}

// A namespace made with `ip netns add`, deleted at the end.
class ScopedNetns {
 public:
  explicit ScopedNetns(std::string name) : name_(std::move(name)) {
    created_ = std::system(("ip netns add " + name_ + " 2>/dev/null").c_str()) == 0;
  }
  ScopedNetns(const ScopedNetns&) = delete;
  ScopedNetns& operator=(const ScopedNetns&) = delete;
  ~ScopedNetns() {
    if (created_ && std::system(("ip netns del " + name_).c_str()) != 0) {
      ADD_FAILURE() << "could not delete network namespace " << name_;
    }
  }
  bool created() const { return created_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  bool created_ = false;
};

TEST(ContainerProcessIsolationTest, JoinsTheNamedNetworkNamespace) {
  if (!Isolated()) {
    GTEST_SKIP() << "needs root with mount namespaces";
  }
  ScopedNetns netns("rlc-" + std::to_string(getpid()));
  ASSERT_TRUE(netns.created());
  TempDir dir;
  ContainerOptions options;
  options.spec.program = "/bin/readlink";
  options.spec.args = {"/proc/self/ns/net"};
  options.netns = netns.name();
  options.log = dir.path() / "log";
  ContainerProcess process(options);
  ASSERT_EQ(process.Wait(2s), 0);
  struct stat info {};
  ASSERT_EQ(stat(("/run/netns/" + netns.name()).c_str(), &info), 0);
  EXPECT_EQ(ReadFile(options.log), "net:[" + std::to_string(info.st_ino) + "]\n");

  options.netns = "rlc-missing-" + std::to_string(getpid());
  try {
    ContainerProcess missing(options);
    ADD_FAILURE() << "joined a missing namespace";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(options.netns), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace ringleader::devcluster::kubelet
