// Probes against real sockets and processes: httpGet status ranges, headers, timeout, named
// ports; tcpSocket; exec with the container's env; from inside a network namespace (as root);
// and ProbeTracker's timing and thresholds with injected time points.
#include "tests/devcluster/kubelet/probe_runner.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/devcluster/kubelet/container_process.h"

namespace ringleader::devcluster::kubelet {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A TCP socket on 127.0.0.1:port (0: the kernel picks), made in network namespace `netns`
// ("" = here): a socket keeps the namespace of the thread that created it. -1 when bind fails.
int LoopbackSocket(bool listening, const std::string& netns = "", int port = 0) {
  int fd = -1;
  std::thread maker([&] {
    if (!netns.empty()) {
      const int ns = open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
      if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) {
        return;
      }
      close(ns);
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || (listening && listen(fd, 16) != 0)) {
      close(fd);
      fd = -1;
    }
  });
  maker.join();
  return fd;
}

int PortOf(int fd) {
  sockaddr_in address{};
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  return ntohs(address.sin_port);
}

// Answers every request with `status` and remembers the last request head.
class TestHttpServer {
 public:
  explicit TestHttpServer(int status, const std::string& netns = "")
      : status_(status), fd_(LoopbackSocket(true, netns)), port_(fd_ >= 0 ? PortOf(fd_) : 0) {
    thread_ = std::thread([this] { Serve(); });
  }
  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;
  ~TestHttpServer() {
    // Wakes the blocked accept.
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  std::string LastRequest() {
    std::lock_guard lock(mu_);
    return last_request_;
  }

 private:
  void Serve() {
    while (true) {
      const int connection = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (connection < 0) {
        return;
      }
      std::string request;
      char buffer[1024];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t got = read(connection, buffer, sizeof buffer);
        if (got <= 0) {
          break;
        }
        request.append(buffer, static_cast<std::size_t>(got));
      }
      {
        std::lock_guard lock(mu_);
        last_request_ = request;
      }
      const std::string response =
          "HTTP/1.1 " + std::to_string(status_) + " Test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      [[maybe_unused]] const ssize_t wrote = write(connection, response.data(), response.size());
      close(connection);
    }
  }

  const int status_;
  const int fd_;
  const int port_;
  std::thread thread_;
  std::mutex mu_;
  std::string last_request_;
};

json HttpProbe(const json& port, const std::string& path = "/healthz") {
  return {{"httpGet", {{"path", path}, {"port", port}}}, {"timeoutSeconds", 1}};
}

LaunchSpec Container() {
  LaunchSpec spec;
  spec.program = "/bin/true";
  spec.env = {{"PATH", "/usr/bin:/bin"}, {"X", "yes"}};
  return spec;
}

TEST(HttpProbeTest, SucceedsOn2xxAnd3xxSendingPathHostAndHeaders) {
  for (int status : {200, 204, 302, 399}) {
    TestHttpServer server(status);
    json probe = HttpProbe(server.port(), "/readyz?full=1");
    probe["httpGet"]["httpHeaders"] = {{{"name", "X-Probe"}, {"value", "one"}}};
    const ProbeAttempt attempt = RunProbeOnce(probe, "127.0.0.1", "", Container());
    EXPECT_EQ(attempt.outcome, ProbeOutcome::kSuccess) << status << ": " << attempt.message;
    const std::string request = server.LastRequest();
    EXPECT_EQ(request.rfind("GET /readyz?full=1 HTTP/1.1\r\n", 0), 0u) << request;
    EXPECT_NE(request.find("Host: 127.0.0.1:" + std::to_string(server.port()) + "\r\n"), std::string::npos) << request;
    EXPECT_NE(request.find("X-Probe: one\r\n"), std::string::npos) << request;
    EXPECT_NE(request.find("User-Agent: kube-probe/"), std::string::npos) << request;
  }
}

TEST(HttpProbeTest, FailsOnOtherStatusesWithTheKubeletMessage) {
  for (int status : {199, 400, 500, 503}) {
    TestHttpServer server(status);
    const ProbeAttempt attempt = RunProbeOnce(HttpProbe(server.port()), "127.0.0.1", "", Container());
    EXPECT_EQ(attempt.outcome, ProbeOutcome::kFailure) << status;
    EXPECT_EQ(attempt.message, "HTTP probe failed with statuscode: " + std::to_string(status));
  }
}

TEST(HttpProbeTest, TimesOutWhenTheServerNeverAnswers) {
  // Listening but never accepting: the kernel completes the handshake, nobody replies.
  const int silent = LoopbackSocket(true);
  ASSERT_GE(silent, 0);
  const auto start = Clock::now();
  const ProbeAttempt attempt = RunProbeOnce(HttpProbe(PortOf(silent)), "127.0.0.1", "", Container());
  const auto took = Clock::now() - start;
  close(silent);
  EXPECT_EQ(attempt.outcome, ProbeOutcome::kFailure);
  EXPECT_NE(attempt.message.find("Client.Timeout exceeded"), std::string::npos) << attempt.message;
  EXPECT_GE(took, 900ms);
  EXPECT_LT(took, 2500ms);
}

TEST(HttpProbeTest, RefusedConnectionFails) {
  // Bound without listening: the port is held, and connecting is refused.
  const int closed = LoopbackSocket(false);
  ASSERT_GE(closed, 0);
  const ProbeAttempt attempt = RunProbeOnce(HttpProbe(PortOf(closed)), "127.0.0.1", "", Container());
  close(closed);
  EXPECT_EQ(attempt.outcome, ProbeOutcome::kFailure);
  EXPECT_NE(attempt.message.find("connect: Connection refused"), std::string::npos) << attempt.message;
}

TEST(HttpProbeTest, NamedPortsResolveFromTheContainer) {
  TestHttpServer server(200);
  LaunchSpec container = Container();
  container.named_ports = {{"metrics", server.port()}};
  EXPECT_EQ(RunProbeOnce(HttpProbe("metrics"), "127.0.0.1", "", container).outcome, ProbeOutcome::kSuccess);
  // A number written as a string is taken as the number, as Kubernetes does.
  EXPECT_EQ(RunProbeOnce(HttpProbe(std::to_string(server.port())), "127.0.0.1", "", container).outcome,
            ProbeOutcome::kSuccess);
  const ProbeAttempt unknown = RunProbeOnce(HttpProbe("admin"), "127.0.0.1", "", container);
  EXPECT_EQ(unknown.outcome, ProbeOutcome::kFailure);
  EXPECT_NE(unknown.message.find("couldn't find port: admin"), std::string::npos) << unknown.message;
  EXPECT_EQ(RunProbeOnce(HttpProbe(70000), "127.0.0.1", "", container).outcome, ProbeOutcome::kFailure);
}

TEST(HttpProbeTest, HostFieldReplacesThePodIpAndHttpsIsRefused) {
  TestHttpServer server(200);
  json probe = HttpProbe(server.port());
  probe["httpGet"]["host"] = "127.0.0.1";
  EXPECT_EQ(RunProbeOnce(probe, "", "", Container()).outcome, ProbeOutcome::kSuccess);
  probe["httpGet"]["scheme"] = "HTTPS";
  EXPECT_EQ(RunProbeOnce(probe, "", "", Container()).outcome, ProbeOutcome::kFailure);
}

TEST(TcpProbeTest, SucceedsWhenTheConnectionOpens) {
  const int listening = LoopbackSocket(true);
  const int closed = LoopbackSocket(false);
  ASSERT_GE(listening, 0);
  ASSERT_GE(closed, 0);
  const json open_probe = {{"tcpSocket", {{"port", PortOf(listening)}}}};
  const json closed_probe = {{"tcpSocket", {{"port", PortOf(closed)}}}};
  EXPECT_EQ(RunProbeOnce(open_probe, "127.0.0.1", "", Container()).outcome, ProbeOutcome::kSuccess);
  const ProbeAttempt refused = RunProbeOnce(closed_probe, "127.0.0.1", "", Container());
  EXPECT_EQ(refused.outcome, ProbeOutcome::kFailure);
  EXPECT_EQ(refused.message.rfind("dial tcp 127.0.0.1:" + std::to_string(PortOf(closed)) + ": ", 0), 0u)
      << refused.message;
  close(listening);
  close(closed);
}

json ExecProbe(std::vector<std::string> command) {
  return {{"exec", {{"command", std::move(command)}}}, {"timeoutSeconds", 1}};
}

TEST(ExecProbeTest, ExitZeroSucceedsWithTheContainersEnv) {
  EXPECT_EQ(RunProbeOnce(ExecProbe({"sh", "-c", "test \"$X\" = yes"}), "", "", Container()).outcome,
            ProbeOutcome::kSuccess);
  LaunchSpec other = Container();
  other.env["X"] = "no";
  EXPECT_EQ(RunProbeOnce(ExecProbe({"sh", "-c", "test \"$X\" = yes"}), "", "", other).outcome, ProbeOutcome::kFailure);
}

TEST(ExecProbeTest, FailureCarriesTheOutput) {
  const ProbeAttempt attempt = RunProbeOnce(ExecProbe({"sh", "-c", "echo not ready; exit 1"}), "", "", Container());
  EXPECT_EQ(attempt.outcome, ProbeOutcome::kFailure);
  EXPECT_EQ(attempt.message, "not ready\n");
  const ProbeAttempt silent = RunProbeOnce(ExecProbe({"/bin/false"}), "", "", Container());
  EXPECT_EQ(silent.message, "command \"/bin/false\" exited with code 1");
  const ProbeAttempt missing = RunProbeOnce(ExecProbe({"no-such-command"}), "", "", Container());
  EXPECT_EQ(missing.outcome, ProbeOutcome::kFailure);
  EXPECT_NE(missing.message.find("not found in $PATH"), std::string::npos) << missing.message;
}

TEST(ExecProbeTest, TimesOutAndKillsTheCommand) {
  const auto start = Clock::now();
  const ProbeAttempt attempt = RunProbeOnce(ExecProbe({"sleep", "30"}), "", "", Container());
  const auto took = Clock::now() - start;
  EXPECT_EQ(attempt.outcome, ProbeOutcome::kFailure);
  EXPECT_EQ(attempt.message, "command \"sleep 30\" timed out");
  EXPECT_GE(took, 900ms);
  EXPECT_LT(took, 2500ms);
}

TEST(ProbeTest, ProbeWithoutAHandlerFails) {
  EXPECT_EQ(RunProbeOnce({{"grpc", {{"port", 1}}}}, "127.0.0.1", "", Container()).outcome, ProbeOutcome::kFailure);
}

// A namespace made with `ip netns add` with loopback up, deleted at the end.
class ScopedNetns {
 public:
  explicit ScopedNetns(std::string name) : name_(std::move(name)) {
    created_ = std::system(("ip netns add " + name_ + " 2>/dev/null").c_str()) == 0;
    up_ = created_ && std::system(("ip -n " + name_ + " link set lo up").c_str()) == 0;
  }
  ScopedNetns(const ScopedNetns&) = delete;
  ScopedNetns& operator=(const ScopedNetns&) = delete;
  ~ScopedNetns() {
    if (created_ && std::system(("ip netns del " + name_).c_str()) != 0) {
      ADD_FAILURE() << "could not delete network namespace " << name_;
    }
  }
  bool ready() const { return up_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  bool created_ = false;
  bool up_ = false;
};

TEST(NetnsProbeTest, ProbesConnectAndExecFromInsideTheNamespace) {
  if (!ContainerIsolationSupported(nullptr)) {
    GTEST_SKIP() << "needs root with namespaces";
  }
  ScopedNetns netns("rlc-" + std::to_string(getpid()));
  ASSERT_TRUE(netns.ready());
  {
    TestHttpServer server(200, netns.name());
    ASSERT_GT(server.port(), 0);
    EXPECT_EQ(RunProbeOnce(HttpProbe(server.port()), "127.0.0.1", netns.name(), Container()).outcome,
              ProbeOutcome::kSuccess);
    const json tcp = {{"tcpSocket", {{"port", server.port()}}}};
    EXPECT_EQ(RunProbeOnce(tcp, "127.0.0.1", netns.name(), Container()).outcome, ProbeOutcome::kSuccess);
    // Holding the same port here without listening makes the probe from here surely refused;
    // when something here already uses the port, that half is skipped.
    if (const int here = LoopbackSocket(false, "", server.port()); here >= 0) {
      EXPECT_EQ(RunProbeOnce(tcp, "127.0.0.1", "", Container()).outcome, ProbeOutcome::kFailure);
      close(here);
    }
  }
  const ProbeAttempt exec = RunProbeOnce(ExecProbe({"readlink", "/proc/self/ns/net"}), "", netns.name(), Container());
  struct stat info {};
  ASSERT_EQ(stat(("/run/netns/" + netns.name()).c_str(), &info), 0);
  EXPECT_EQ(exec.outcome, ProbeOutcome::kSuccess) << exec.message;
  EXPECT_EQ(exec.message, "net:[" + std::to_string(info.st_ino) + "]\n");
  EXPECT_EQ(RunProbeOnce(HttpProbe(80), "127.0.0.1", "rlc-missing", Container()).outcome, ProbeOutcome::kFailure);
}

TEST(ProbeTrackerTest, KubernetesDefaults) {
  const Clock::time_point start{};
  ProbeTracker tracker({{"httpGet", {{"port", 80}}}}, start);
  EXPECT_TRUE(tracker.Due(start));  // initialDelaySeconds 0
  EXPECT_EQ(tracker.Timeout(), 1s);
  EXPECT_FALSE(tracker.Succeeded());
  EXPECT_FALSE(tracker.Failed());
  tracker.Record({ProbeOutcome::kFailure, "down"}, start);
  EXPECT_FALSE(tracker.Due(start + 9s));  // periodSeconds 10
  EXPECT_TRUE(tracker.Due(start + 10s));
  tracker.Record({ProbeOutcome::kFailure, "down"}, start + 10s);
  EXPECT_FALSE(tracker.Failed());
  tracker.Record({ProbeOutcome::kFailure, "still down"}, start + 20s);
  EXPECT_TRUE(tracker.Failed());  // failureThreshold 3
  EXPECT_EQ(tracker.LastMessage(), "still down");
  tracker.Record({ProbeOutcome::kSuccess, ""}, start + 30s);
  EXPECT_TRUE(tracker.Succeeded());  // successThreshold 1
  EXPECT_FALSE(tracker.Failed());
  EXPECT_EQ(tracker.LastMessage(), "");
}

TEST(ProbeTrackerTest, InitialDelayPeriodAndThresholdsNeedConsecutiveResults) {
  const Clock::time_point start{};
  ProbeTracker tracker({{"initialDelaySeconds", 5},
                        {"periodSeconds", 2},
                        {"timeoutSeconds", 3},
                        {"successThreshold", 2},
                        {"failureThreshold", 2}},
                       start);
  EXPECT_FALSE(tracker.Due(start + 4s));
  EXPECT_TRUE(tracker.Due(start + 5s));
  EXPECT_EQ(tracker.Timeout(), 3s);
  tracker.Record({ProbeOutcome::kSuccess, ""}, start + 5s);
  EXPECT_FALSE(tracker.Succeeded());
  EXPECT_FALSE(tracker.Due(start + 6s));
  EXPECT_TRUE(tracker.Due(start + 7s));
  tracker.Record({ProbeOutcome::kFailure, "x"}, start + 7s);  // breaks the success run
  tracker.Record({ProbeOutcome::kSuccess, ""}, start + 9s);
  EXPECT_FALSE(tracker.Succeeded());
  tracker.Record({ProbeOutcome::kSuccess, ""}, start + 11s);
  EXPECT_TRUE(tracker.Succeeded());
  tracker.Record({ProbeOutcome::kFailure, "x"}, start + 13s);
  EXPECT_FALSE(tracker.Failed());
  EXPECT_FALSE(tracker.Succeeded());
  tracker.Record({ProbeOutcome::kFailure, "x"}, start + 15s);
  EXPECT_TRUE(tracker.Failed());
}

TEST(ProbeTrackerTest, ZeroMeansDefaultAndNegativeIsRefused) {
  const Clock::time_point start{};
  ProbeTracker zeros({{"periodSeconds", 0}, {"failureThreshold", 0}, {"timeoutSeconds", 0}}, start);
  EXPECT_EQ(zeros.Timeout(), 1s);
  zeros.Record({ProbeOutcome::kFailure, ""}, start);
  EXPECT_FALSE(zeros.Due(start + 9s));
  EXPECT_THROW(ProbeTracker({{"periodSeconds", -1}}, start), std::invalid_argument);
  EXPECT_THROW(ProbeTracker({{"initialDelaySeconds", -1}}, start), std::invalid_argument);
}

}  // namespace
}  // namespace ringleader::devcluster::kubelet
