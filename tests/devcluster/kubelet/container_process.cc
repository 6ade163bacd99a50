// Starts a container's process: every string, fd and mount point is prepared before fork, so the
// child only makes system calls (the kubelet is multi-threaded) and reports a failed step by index.
#include "tests/devcluster/kubelet/container_process.h"
#include "tests/devcluster/kubelet/errno_text.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

namespace ringleader::devcluster::kubelet {
namespace {

// What the child writes to the error pipe when a step fails.
struct ChildError {
  int step;
  int error;
};

struct MountStep {
  std::string source;
  std::string target;
  unsigned long remount_flags;  // 0: stays writable
  // /proc/self/fd/N for the source, which the child opens before its first mount and binds from:
  // an earlier mount (a volume on /tmp) may hide the source's path.
  std::array<char, 32> bind_from = {};
};

// Everything the child needs, built before fork.
struct ChildPlan {
  pid_t parent = -1;  // the forking process, which the child must not outlive
  bool isolate = false;
  int netns_fd = -1;
  std::vector<MountStep> mounts;
  std::string working_dir;
  int stdin_fd = -1;
  int output_fd = -1;
  std::string program;
  int program_fd = -1;  // the child's O_PATH fd of `program`, opened before its mounts
  std::vector<std::string> argv_storage;
  std::vector<std::string> env_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
  // steps[i] describes step i for the parent's error message.
  std::vector<std::string> steps;
};

enum Step : int { kSignals, kSetsid, kSetns, kUnshare, kMakePrivate, kChdir, kRedirect, kExec, kFirstMount };


// A close-on-exec fd above 2, so dup2 onto 0..2 in the child never hits the fd itself.
int KeepAbove2(int fd) {
  if (fd < 0 || fd > 2) {
    return fd;
  }
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

int OpenOrThrow(const std::string& path, int flags, const std::string& what) {
  const int fd = KeepAbove2(open(path.c_str(), flags | O_CLOEXEC, 0644));
  if (fd < 0) {
    throw std::runtime_error(what + " " + path + ": " + ErrnoText(errno));
  }
  return fd;
}

bool IsUnder(const std::filesystem::path& path, const std::filesystem::path& base) {
  auto [base_end, path_it] = std::mismatch(base.begin(), base.end(), path.begin(), path.end());
  return base_end == base.end();
}

std::size_t Depth(const std::string& path) {
  const std::filesystem::path normal = std::filesystem::path(path).lexically_normal();
  return static_cast<std::size_t>(std::distance(normal.begin(), normal.end()));
}

// The flags a read-only remount must keep: inside a user namespace the kernel refuses to drop
// a locked nosuid/nodev/noexec.
unsigned long ReadOnlyRemountFlags(const std::filesystem::path& source) {
  unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY;
  struct statvfs info {};
  if (statvfs(source.c_str(), &info) == 0) {
    if ((info.f_flag & ST_NOSUID) != 0) {
      flags |= MS_NOSUID;
    }
    if ((info.f_flag & ST_NODEV) != 0) {
      flags |= MS_NODEV;
    }
    if ((info.f_flag & ST_NOEXEC) != 0) {
      flags |= MS_NOEXEC;
    }
  }
  return flags;
}

// Makes `where` exist as a directory (or an empty file when `as_file`), recording what it made.
void EnsureMountPoint(const std::filesystem::path& where, bool as_file, std::vector<std::filesystem::path>& created) {
  std::error_code error;
  if (std::filesystem::exists(where, error)) {
    return;
  }
  std::filesystem::path prefix;
  const std::filesystem::path dir = as_file ? where.parent_path() : where;
  for (const std::filesystem::path& part : dir) {
    prefix /= part;
    if (!std::filesystem::exists(prefix, error)) {
      if (!std::filesystem::create_directory(prefix, error) && error) {
        throw std::runtime_error("create mount point " + prefix.string() + ": " + error.message());
      }
      created.push_back(prefix);
    }
  }
  if (as_file) {
    close(OpenOrThrow(where.string(), O_WRONLY | O_CREAT | O_EXCL, "create mount point"));
    created.push_back(where);
  }
}

// Mount steps with parents before children; missing mount points are created where the child
// will look for them: under an enclosing mount's host dir when the mount is nested.
std::vector<MountStep> PlanMounts(const std::vector<Mount>& mounts, const std::filesystem::path& hosts_file,
                                  std::vector<std::filesystem::path>& created) {
  std::vector<Mount> ordered = mounts;
  if (!hosts_file.empty()) {
    ordered.push_back(Mount{.host = hosts_file, .path = "/etc/hosts", .read_only = false});
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const Mount& a, const Mount& b) { return Depth(a.path) < Depth(b.path); });
  std::vector<MountStep> steps;
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    const std::filesystem::path target = std::filesystem::path(ordered[i].path).lexically_normal();
    if (!target.is_absolute()) {
      throw std::runtime_error("mount path \"" + ordered[i].path + "\" is not absolute");
    }
    std::filesystem::path where = target;
    std::size_t enclosing_depth = 0;
    for (std::size_t j = 0; j < i; ++j) {
      const std::filesystem::path outer = std::filesystem::path(ordered[j].path).lexically_normal();
      if (outer != target && IsUnder(target, outer) && Depth(outer.string()) >= enclosing_depth) {
        enclosing_depth = Depth(outer.string());
        where = ordered[j].host / target.lexically_relative(outer);
      }
    }
    std::error_code error;
    EnsureMountPoint(where, std::filesystem::is_regular_file(ordered[i].host, error), created);
    steps.push_back(MountStep{.source = ordered[i].host.string(),
                              .target = target.string(),
                              .remount_flags = ordered[i].read_only ? ReadOnlyRemountFlags(ordered[i].host) : 0});
  }
  return steps;
}

void ResetSignals() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  // Ignored signals (servers ignore SIGPIPE) would stay ignored across exec.
  for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
    if (signal_number != SIGKILL && signal_number != SIGSTOP) {
      sigaction(signal_number, &default_action, nullptr);
    }
  }
}

// "/proc/self/fd/<fd>" into `out`, without allocating (the forked child's rule).
void ProcFdPath(int fd, std::array<char, 32>& out) {
  static constexpr char kPrefix[] = "/proc/self/fd/";
  std::size_t length = sizeof kPrefix - 1;
  std::memcpy(out.data(), kPrefix, length);
  char digits[12];
  std::size_t count = 0;
  do {
    digits[count++] = static_cast<char>('0' + fd % 10);
    fd /= 10;
  } while (fd > 0);
  while (count > 0) {
    out[length++] = digits[--count];
  }
  out[length] = '\0';
}

// Runs in the forked child (its own copy of the plan): system calls only, no allocation.
[[noreturn]] void RunChild(ChildPlan& plan, int error_fd) {
  auto fail = [error_fd](int step) {
    const ChildError report{step, errno};
    [[maybe_unused]] const ssize_t written = write(error_fd, &report, sizeof report);
    _exit(127);
  };
  ResetSignals();
  if (setsid() < 0) {
    fail(kSetsid);
  }
  // Its own session would let it outlive a crashed devcluster; the kernel kills it instead (the
  // forking thread is a Pod's worker, which lives until its containers are stopped).
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != plan.parent) {
    _exit(127);
  }
  if (plan.isolate) {
    if (plan.netns_fd >= 0 && setns(plan.netns_fd, CLONE_NEWNET) != 0) {
      fail(kSetns);
    }
    if (unshare(CLONE_NEWNS) != 0) {
      fail(kUnshare);
    }
    // Private, so the container's mounts never propagate back to the host.
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      fail(kMakePrivate);
    }
    // The program too: a volume on /tmp hides a checkout under /tmp, as it hides the sources.
    plan.program_fd = open(plan.program.c_str(), O_PATH | O_CLOEXEC);
    // Every source is opened before the first mount can hide it; the fds close at exec.
    for (std::size_t i = 0; i < plan.mounts.size(); ++i) {
      const int source = open(plan.mounts[i].source.c_str(), O_PATH | O_CLOEXEC);
      if (source < 0) {
        fail(kFirstMount + static_cast<int>(2 * i));
      }
      ProcFdPath(source, plan.mounts[i].bind_from);
    }
    for (std::size_t i = 0; i < plan.mounts.size(); ++i) {
      const MountStep& step = plan.mounts[i];
      const int bind_step = kFirstMount + static_cast<int>(2 * i);
      if (mount(step.bind_from.data(), step.target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
        fail(bind_step);
      }
      if (step.remount_flags != 0 && mount(nullptr, step.target.c_str(), nullptr, step.remount_flags, nullptr) != 0) {
        fail(bind_step + 1);
      }
    }
  }
  if (!plan.working_dir.empty() && chdir(plan.working_dir.c_str()) != 0) {
    fail(kChdir);
  }
  if (dup2(plan.stdin_fd, 0) < 0 || dup2(plan.output_fd, 1) < 0 || dup2(plan.output_fd, 2) < 0) {
    fail(kRedirect);
  }
  // Fds other threads opened without O_CLOEXEC must not leak into the container.
  syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  execve(plan.program.c_str(), plan.argv.data(), plan.envp.data());
  // Its path hidden by a volume: run the file opened before the mounts. (A #! script this way
  // fails too, ENOENT: its interpreter cannot open the close-on-exec fd's /proc path.)
  if ((errno == ENOENT || errno == ENOTDIR) && plan.program_fd >= 0) {
    syscall(SYS_execveat, plan.program_fd, "", plan.argv.data(), plan.envp.data(), AT_EMPTY_PATH);
  }
  fail(kExec);
  _exit(127);
}

ChildPlan BuildPlan(const ContainerOptions& options, bool isolate, std::vector<std::filesystem::path>& created) {
  ChildPlan plan;
  plan.parent = getpid();
  plan.isolate = isolate;
  const LaunchSpec spec = isolate ? options.spec : MapMountPathsToHost(options.spec);
  plan.program = spec.program.string();
  plan.working_dir = spec.working_dir;
  plan.argv_storage.push_back(plan.program);
  plan.argv_storage.insert(plan.argv_storage.end(), spec.args.begin(), spec.args.end());
  for (const auto& [name, value] : spec.env) {
    plan.env_storage.push_back(name + "=" + value);
  }
  for (std::string& arg : plan.argv_storage) {
    plan.argv.push_back(arg.data());
  }
  plan.argv.push_back(nullptr);
  for (std::string& entry : plan.env_storage) {
    plan.envp.push_back(entry.data());
  }
  plan.envp.push_back(nullptr);
  plan.steps = {"reset signals",
                "setsid",
                "setns into network namespace " + options.netns,
                "unshare the mount namespace",
                "make / private",
                "chdir to " + spec.working_dir,
                "redirect stdio",
                "exec " + plan.program};
  if (isolate) {
    plan.mounts = PlanMounts(spec.mounts, options.hosts_file, created);
    for (const MountStep& step : plan.mounts) {
      plan.steps.push_back("bind-mount " + step.source + " on " + step.target);
      plan.steps.push_back("remount " + step.target + " read-only");
    }
  }
  return plan;
}

void RemoveCreated(const std::vector<std::filesystem::path>& created) {
  for (auto it = created.rbegin(); it != created.rend(); ++it) {
    std::error_code ignored;
    std::filesystem::remove(*it, ignored);
  }
}

bool ProbeIsolation(std::string& why) {
  if (geteuid() != 0) {
    why = "not root";
    return false;
  }
  const pid_t child = fork();
  if (child < 0) {
    why = "fork: " + ErrnoText(errno);
    return false;
  }
  if (child == 0) {
    if (unshare(CLONE_NEWNS) != 0) {
      _exit(1);
    }
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      _exit(2);
    }
    const int own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (own < 0 || setns(own, CLONE_NEWNET) != 0) {
      _exit(3);
    }
    _exit(0);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  switch (code) {
    case 0:
      return true;
    case 1:
      why = "unshare(CLONE_NEWNS) is refused";
      return false;
    case 2:
      why = "making / private is refused";
      return false;
    case 3:
      why = "setns(CLONE_NEWNET) is refused";
      return false;
    default:
      why = "the isolation check crashed";
      return false;
  }
}

}  // namespace

bool ContainerIsolationSupported(std::string* why) {
  static const std::pair<bool, std::string> answer = [] {
    std::string reason;
    const bool supported = ProbeIsolation(reason);
    return std::make_pair(supported, reason);
  }();
  if (why != nullptr) {
    *why = answer.second;
  }
  return answer.first;
}

ContainerProcess::ContainerProcess(const ContainerOptions& options) : log_(options.log) {
  isolated_ = options.isolation == Isolation::kAuto && ContainerIsolationSupported(nullptr);
  ChildPlan plan = BuildPlan(options, isolated_, created_mount_points_);
  int error_pipe[2] = {-1, -1};
  try {
    plan.stdin_fd = OpenOrThrow("/dev/null", O_RDONLY, "open stdin");
    plan.output_fd = options.log.empty() ? OpenOrThrow("/dev/null", O_WRONLY, "open log")
                                         : OpenOrThrow(options.log.string(), O_WRONLY | O_CREAT | O_APPEND, "open log");
    if (isolated_ && !options.netns.empty()) {
      if (options.netns.find('/') != std::string::npos) {
        throw std::runtime_error("network namespace name \"" + options.netns + "\" has a '/'");
      }
      plan.netns_fd = OpenOrThrow("/run/netns/" + options.netns, O_RDONLY, "open network namespace");
    }
    if (pipe2(error_pipe, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe: " + ErrnoText(errno));
    }
    pid_ = fork();
    if (pid_ < 0) {
      throw std::runtime_error("fork: " + ErrnoText(errno));
    }
    if (pid_ == 0) {
      RunChild(plan, error_pipe[1]);
    }
  } catch (...) {
    for (int fd : {plan.stdin_fd, plan.output_fd, plan.netns_fd, error_pipe[0], error_pipe[1]}) {
      if (fd >= 0) {
        close(fd);
      }
    }
    RemoveCreated(created_mount_points_);
    throw;
  }
  for (int fd : {plan.stdin_fd, plan.output_fd, plan.netns_fd, error_pipe[1]}) {
    if (fd >= 0) {
      close(fd);
    }
  }
  // EOF without a report means exec succeeded (the pipe is close-on-exec).
  ChildError report{};
  ssize_t got = 0;
  do {
    got = read(error_pipe[0], &report, sizeof report);
  } while (got < 0 && errno == EINTR);
  close(error_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof report)) {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    RemoveCreated(created_mount_points_);
    const std::string step = report.step >= 0 && static_cast<std::size_t>(report.step) < plan.steps.size()
                                 ? plan.steps[static_cast<std::size_t>(report.step)]
                                 : "step " + std::to_string(report.step);
    throw std::runtime_error("container " + plan.program + ": " + step + ": " + ErrnoText(report.error));
  }
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
}

ContainerProcess::~ContainerProcess() {
  if (SignalGroupIfAlive(SIGKILL)) {
    WaitForExit(std::chrono::milliseconds::max());
  }
  ExitCode();
  if (pidfd_ >= 0) {
    close(pidfd_);
  }
}

bool ContainerProcess::ReapIfExitedLocked() {
  if (exit_code_) {
    return true;
  }
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    // ECHILD: something else in this process reaped it; the status is lost.
    exit_code_ = -1;
    return true;
  }
  if (info.si_pid != pid_) {
    return false;
  }
  // Still a zombie, so the group id cannot have been reused: the stragglers die with it.
  kill(-pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  exit_code_ = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  return true;
}

bool ContainerProcess::SignalGroupIfAlive(int signal) {
  std::lock_guard lock(mu_);
  if (exit_code_) {
    return false;
  }
  kill(-pid_, signal);
  return true;
}

bool ContainerProcess::WaitForExit(std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const bool forever = timeout == std::chrono::milliseconds::max();
  const Clock::time_point deadline = forever ? Clock::time_point::max() : Clock::now() + timeout;
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (exit_code_) {
        return true;
      }
      siginfo_t info{};
      if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == pid_) {
        return true;
      }
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (!forever && left.count() <= 0) {
      return false;
    }
    if (pidfd_ >= 0) {
      pollfd ready{.fd = pidfd_, .events = POLLIN, .revents = 0};
      poll(&ready, 1, forever ? -1 : static_cast<int>(std::min<std::int64_t>(left.count(), 60'000)));
    } else {
      // Without pidfd (kernels before 5.3) the only portable wait that does not reap is polling.
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(2)));
    }
  }
}

bool ContainerProcess::Running() {
  std::lock_guard lock(mu_);
  return !ReapIfExitedLocked();
}

std::optional<int> ContainerProcess::ExitCode() {
  std::lock_guard lock(mu_);
  ReapIfExitedLocked();
  return exit_code_;
}

std::optional<int> ContainerProcess::Wait(std::chrono::milliseconds timeout) {
  WaitForExit(timeout);
  return ExitCode();
}

void ContainerProcess::Terminate(std::chrono::milliseconds grace) {
  if (!SignalGroupIfAlive(SIGTERM)) {
    return;
  }
  if (!WaitForExit(grace)) {
    SignalGroupIfAlive(SIGKILL);
  }
  WaitForExit(std::chrono::milliseconds::max());
  ExitCode();
}

std::string ContainerProcess::LogTail(std::size_t max_bytes) const {
  if (log_.empty()) {
    return {};
  }
  const int fd = open(log_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return {};
  }
  struct stat info {};
  std::string tail;
  if (fstat(fd, &info) == 0) {
    const std::size_t size = static_cast<std::size_t>(info.st_size);
    const std::size_t take = std::min(size, max_bytes);
    tail.resize(take);
    std::size_t done = 0;
    while (done < take) {
      const ssize_t got = pread(fd, tail.data() + done, take - done, static_cast<off_t>(size - take + done));
      if (got <= 0) {
        break;
      }
      done += static_cast<std::size_t>(got);
    }
    tail.resize(done);
  }
  close(fd);
  return tail;
}

}  // namespace ringleader::devcluster::kubelet
