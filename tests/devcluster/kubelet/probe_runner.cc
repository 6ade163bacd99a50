// Probe attempts over non-blocking sockets with one deadline per attempt, exec probes as short
// container processes, and the Kubernetes threshold bookkeeping.
#include "tests/devcluster/kubelet/probe_runner.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "tests/devcluster/kubelet/container_process.h"
#include "tests/devcluster/kubelet/container_spec.h"
#include "tests/devcluster/kubelet/errno_text.h"

namespace ringleader::devcluster::kubelet {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxExecOutput = 10 * 1024;  // the kubelet keeps at most 10 KiB of output
constexpr std::size_t kMaxStatusLine = 4096;

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(-1); }
  void Reset(int fd) {
    if (fd_ >= 0) {
      close(fd_);
    }
    fd_ = fd;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

ProbeAttempt Success(std::string message = {}) { return {ProbeOutcome::kSuccess, std::move(message)}; }
ProbeAttempt Failure(std::string message) { return {ProbeOutcome::kFailure, std::move(message)}; }

std::chrono::seconds TimeoutOf(const json& probe) {
  const std::int64_t seconds = probe.value("timeoutSeconds", std::int64_t{0});
  return std::chrono::seconds(seconds > 0 ? seconds : 1);
}

// Kubernetes' ResolveContainerPort: a number, a port name, or a number written as a string.
std::optional<int> ResolvePort(const json& port, const LaunchSpec& container, std::string& error) {
  int number = -1;
  if (port.is_number_integer()) {
    number = port.get<int>();
  } else if (port.is_string()) {
    const std::string name = port.get<std::string>();
    if (auto it = container.named_ports.find(name); it != container.named_ports.end()) {
      number = it->second;
    } else if (!name.empty() &&
               std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c); })) {
      number = name.size() <= 5 ? std::stoi(name) : -1;
    } else {
      error = "couldn't find port: " + name + " in container";
      return std::nullopt;
    }
  }
  if (number <= 0 || number >= 65536) {
    error = "invalid port number: " + port.dump();
    return std::nullopt;
  }
  return number;
}

// An httpGet's or tcpSocket's `host`, which defaults to the Pod's address.
std::string TargetHost(const json& action, const std::string& pod_ip) {
  const std::string host = action.value("host", std::string());
  return host.empty() ? pod_ip : host;
}

std::string HostPort(const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

int MillisLeft(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<std::int64_t>(left, 0, 60'000));
}

// Waits for `events` on `fd` until `deadline`; false on timeout.
bool PollUntil(int fd, short events, Clock::time_point deadline) {
  while (true) {
    const int wait_ms = MillisLeft(deadline);
    pollfd entry{.fd = fd, .events = events, .revents = 0};
    const int ready = poll(&entry, 1, wait_ms);
    if (ready > 0) {
      return true;
    }
    if ((ready < 0 && errno != EINTR) || MillisLeft(deadline) == 0) {
      return false;
    }
  }
}

// Opens a TCP connection before `deadline`; "" on success, else Go-style "dial tcp" text.
std::string Dial(const std::string& host, int port, Clock::time_point deadline, UniqueFd& connection) {
  const std::string where = "dial tcp " + HostPort(host, port) + ": ";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return where + "lookup " + host + ": " + gai_strerror(rc);
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, &freeaddrinfo);
  std::string error = where + "no address";
  for (const addrinfo* address = found; address != nullptr; address = address->ai_next) {
    connection.Reset(
        socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, address->ai_protocol));
    if (connection.get() < 0) {
      error = where + "socket: " + ErrnoText(errno);
      continue;
    }
    if (connect(connection.get(), address->ai_addr, address->ai_addrlen) == 0) {
      return {};
    }
    if (errno != EINPROGRESS) {
      error = where + "connect: " + ErrnoText(errno);
      continue;
    }
    if (!PollUntil(connection.get(), POLLOUT, deadline)) {
      return where + "i/o timeout";
    }
    int socket_error = 0;
    socklen_t length = sizeof socket_error;
    getsockopt(connection.get(), SOL_SOCKET, SO_ERROR, &socket_error, &length);
    if (socket_error == 0) {
      return {};
    }
    error = where + "connect: " + ErrnoText(socket_error);
  }
  connection.Reset(-1);
  return error;
}

// Runs `work` with its sockets in network namespace `netns`.
template <typename Work>
ProbeAttempt FromNetns(const std::string& netns, Work work) {
  if (netns.empty()) {
    return work();
  }
  ProbeAttempt result = Failure("");
  std::thread worker([&] {
    const std::string path = "/run/netns/" + netns;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      result = Failure("open network namespace " + path + ": " + ErrnoText(errno));
      return;
    }
    const int rc = setns(fd, CLONE_NEWNET);
    const int setns_error = errno;
    close(fd);
    if (rc != 0) {
      result = Failure("setns into " + path + ": " + ErrnoText(setns_error));
      return;
    }
    // An exception must not escape the thread (std::terminate); the caller gets it as a failure.
    try {
      result = work();
    } catch (const std::exception& error) {
      result = Failure(error.what());
    }
  });
  worker.join();
  return result;
}

std::string LowerCase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

ProbeAttempt HttpGet(const json& action, const std::string& pod_ip, const LaunchSpec& container,
                     std::chrono::seconds timeout) {
  const std::string scheme = action.value("scheme", std::string("HTTP"));
  if (scheme != "HTTP") {
    return Failure("scheme " + scheme + " is not supported by devcluster's probes");
  }
  std::string error;
  const std::optional<int> port = ResolvePort(action.value("port", json()), container, error);
  if (!port) {
    return Failure(error);
  }
  const std::string host = TargetHost(action, pod_ip);
  std::string path = action.value("path", std::string("/"));
  if (path.empty() || path.front() != '/') {
    path.insert(0, "/");
  }
  const std::string url = "http://" + HostPort(host, *port) + path;
  // Header names are case-insensitive; the probe's own replace the defaults.
  std::map<std::string, std::pair<std::string, std::string>> headers = {
      {"host", {"Host", HostPort(host, *port)}},
      {"user-agent", {"User-Agent", "kube-probe/1.30"}},
      {"accept", {"Accept", "*/*"}}};
  for (const json& header : action.value("httpHeaders", json::array())) {
    const std::string name = header.value("name", std::string());
    headers[LowerCase(name)] = {name, header.value("value", std::string())};
  }
  std::string request = "GET " + path + " HTTP/1.1\r\n";
  for (const auto& [key, header] : headers) {
    request += header.first + ": " + header.second + "\r\n";
  }
  request += "Connection: close\r\n\r\n";

  const Clock::time_point deadline = Clock::now() + timeout;
  const std::string timed_out =
      "Get \"" + url + "\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)";
  UniqueFd connection;
  if (std::string dial_error = Dial(host, *port, deadline, connection); !dial_error.empty()) {
    return Failure("Get \"" + url + "\": " + dial_error);
  }
  std::size_t sent = 0;
  while (sent < request.size()) {
    if (!PollUntil(connection.get(), POLLOUT, deadline)) {
      return Failure(timed_out);
    }
    const ssize_t wrote = send(connection.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (wrote < 0 && errno != EAGAIN && errno != EINTR) {
      return Failure("Get \"" + url + "\": write: " + ErrnoText(errno));
    }
    sent += wrote > 0 ? static_cast<std::size_t>(wrote) : 0;
  }
  std::string response;
  while (response.find("\r\n") == std::string::npos && response.size() < kMaxStatusLine) {
    if (!PollUntil(connection.get(), POLLIN, deadline)) {
      return Failure(timed_out);
    }
    char buffer[1024];
    const ssize_t got = recv(connection.get(), buffer, sizeof buffer, 0);
    if (got == 0) {
      break;
    }
    if (got < 0) {
      if (errno == EAGAIN || errno == EINTR) {
        continue;
      }
      return Failure("Get \"" + url + "\": read: " + ErrnoText(errno));
    }
    response.append(buffer, static_cast<std::size_t>(got));
  }
  // "HTTP/1.1 200 OK"
  const std::size_t space = response.find(' ');
  if (response.compare(0, 5, "HTTP/") != 0 || space == std::string::npos || response.size() < space + 4 ||
      !std::all_of(response.begin() + static_cast<std::ptrdiff_t>(space) + 1,
                   response.begin() + static_cast<std::ptrdiff_t>(space) + 4,
                   [](unsigned char c) { return std::isdigit(c); })) {
    return Failure("Get \"" + url + "\": malformed HTTP response");
  }
  const int status = std::stoi(response.substr(space + 1, 3));
  if (status >= 200 && status < 400) {
    return Success();
  }
  return Failure("HTTP probe failed with statuscode: " + std::to_string(status));
}

ProbeAttempt TcpSocket(const json& action, const std::string& pod_ip, const LaunchSpec& container,
                       std::chrono::seconds timeout) {
  std::string error;
  const std::optional<int> port = ResolvePort(action.value("port", json()), container, error);
  if (!port) {
    return Failure(error);
  }
  const std::string host = TargetHost(action, pod_ip);
  UniqueFd connection;
  if (std::string dial_error = Dial(host, *port, Clock::now() + timeout, connection); !dial_error.empty()) {
    return Failure(dial_error);
  }
  return Success();
}

// command[0] through the container's PATH, as the runtime's exec does.
std::optional<std::filesystem::path> LookPath(const std::string& name, const LaunchSpec& container) {
  if (name.find('/') != std::string::npos) {
    return name;
  }
  auto it = container.env.find("PATH");
  const std::string path = it != container.env.end() ? it->second : kDefaultContainerPath;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find(':', start), path.size());
    const std::filesystem::path candidate = std::filesystem::path(path.substr(start, end - start)) / name;
    if (end > start && access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::string Joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) {
    text += (text.empty() ? "" : " ") + word;
  }
  return text;
}

ProbeAttempt Exec(const json& action, const std::string& netns, const LaunchSpec& container,
                  std::chrono::seconds timeout, Isolation isolation) {
  const std::vector<std::string> command = action.value("command", std::vector<std::string>());
  if (command.empty()) {
    return Failure("exec probe has no command");
  }
  const std::optional<std::filesystem::path> program = LookPath(command[0], container);
  if (!program) {
    return Failure("exec: \"" + command[0] + "\": executable file not found in $PATH");
  }
  ContainerOptions options{
      .spec = container, .netns = netns, .hosts_file = {}, .log = {}, .isolation = isolation};
  options.spec.program = *program;
  options.spec.args.assign(command.begin() + 1, command.end());
  std::string log_template = (std::filesystem::temp_directory_path() / "rl-exec-probe-XXXXXX").string();
  const int log_fd = mkstemp(log_template.data());
  if (log_fd < 0) {
    return Failure("exec probe output file: " + ErrnoText(errno));
  }
  close(log_fd);
  options.log = log_template;
  ProbeAttempt result = Failure("");
  try {
    ContainerProcess process(options);
    const std::optional<int> code = process.Wait(timeout);
    if (!code) {
      process.Terminate(std::chrono::milliseconds(0));
      result = Failure("command \"" + Joined(command) + "\" timed out");
    } else {
      const std::string output = process.LogTail(kMaxExecOutput);
      result =
          *code == 0
              ? Success(output)
              : Failure(output.empty() ? "command \"" + Joined(command) + "\" exited with code " + std::to_string(*code)
                                       : output);
    }
  } catch (const std::runtime_error& error) {
    result = Failure(error.what());
  }
  std::error_code ignored;
  std::filesystem::remove(log_template, ignored);
  return result;
}

std::int64_t Field(const json& probe, const char* name, std::int64_t default_value) {
  const std::int64_t value = probe.value(name, std::int64_t{0});
  if (value < 0) {
    throw std::invalid_argument(std::string("probe ") + name + " must not be negative");
  }
  return value == 0 ? default_value : value;
}

}  // namespace

ProbeAttempt RunProbeOnce(const json& probe, const std::string& pod_ip, const std::string& netns,
                          const LaunchSpec& container, Isolation isolation) {
  const std::chrono::seconds timeout = TimeoutOf(probe);
  if (probe.contains("httpGet")) {
    return FromNetns(netns, [&] { return HttpGet(probe["httpGet"], pod_ip, container, timeout); });
  }
  if (probe.contains("tcpSocket")) {
    return FromNetns(netns, [&] { return TcpSocket(probe["tcpSocket"], pod_ip, container, timeout); });
  }
  if (probe.contains("exec")) {
    return Exec(probe["exec"], netns, container, timeout, isolation);
  }
  return Failure("probe has no supported handler (httpGet, tcpSocket or exec)");
}

ProbeTracker::ProbeTracker(const json& probe, std::chrono::steady_clock::time_point started)
    : period_(Field(probe, "periodSeconds", 10)),
      timeout_(Field(probe, "timeoutSeconds", 1)),
      success_threshold_(Field(probe, "successThreshold", 1)),
      failure_threshold_(Field(probe, "failureThreshold", 3)),
      next_due_(started + std::chrono::seconds(probe.value("initialDelaySeconds", std::int64_t{0}))) {
  if (probe.value("initialDelaySeconds", std::int64_t{0}) < 0) {
    throw std::invalid_argument("probe initialDelaySeconds must not be negative");
  }
}

bool ProbeTracker::Due(std::chrono::steady_clock::time_point now) const { return now >= next_due_; }

void ProbeTracker::Record(const ProbeAttempt& attempt, std::chrono::steady_clock::time_point now) {
  if (attempt.outcome == ProbeOutcome::kSuccess) {
    ++consecutive_successes_;
    consecutive_failures_ = 0;
    last_message_.clear();
  } else {
    ++consecutive_failures_;
    consecutive_successes_ = 0;
    last_message_ = attempt.message;
  }
  next_due_ = now + period_;
}

bool ProbeTracker::Succeeded() const { return consecutive_successes_ >= success_threshold_; }

bool ProbeTracker::Failed() const { return consecutive_failures_ >= failure_threshold_; }

}  // namespace ringleader::devcluster::kubelet
