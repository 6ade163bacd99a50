// ringleader-sidecar's rank 0 as a real process under peers that announce large handshake
// frames and trickle them (issue 20): its memory stays put, each peer is refused and counted,
// and the world still forms.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sidecar/rendezvous/protocol.h"
#include "tests/sidecar/app/exposition.h"
#include "tests/sidecar/app/sidecar_world.h"
#include "tests/support/http_fetch.h"
#include "tests/support/test_environment.h"

namespace ringleader::testing {
namespace {

using std::chrono::seconds;
namespace rz = rendezvous;

// VmRSS of a process, in KiB; 0 if it cannot be read.
long ResidentKiB(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stol(line.substr(6));
    }
  }
  return 0;
}

// A header announcing `length` bytes of payload, as the frame encoder would write it.
std::string HeaderClaiming(rz::MessageType type, std::uint32_t length) {
  return rz::EncodeFrame(type, "").substr(0, rz::kHeaderBytes - 4) +
         std::string{static_cast<char>(length >> 24), static_cast<char>((length >> 16) & 0xFF),
                     static_cast<char>((length >> 8) & 0xFF), static_cast<char>(length & 0xFF)};
}

// A socket to 127.0.0.1:port, or -1.
int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(SidecarFloodTest, LargeHandshakeClaimsLeaveRankZerosMemoryAloneAndTheWorldForms) {
  constexpr int kPeers = 200;
  constexpr std::size_t kTrickled = 1024 * 1024;  // per peer: 200 MiB held before the fix
  constexpr std::size_t kChunk = 16 * 1024;
  const int port = FreePort();
  SidecarWorld world({.world_size = 2,
                      .mode = "preflight",
                      .env = {{"RINGLEADER_RENDEZVOUS_PORT", std::to_string(port)}}});
  world.Start(0);
  ASSERT_TRUE(world.WaitForLog(0, "rendezvous store listening", seconds(30))) << world.AllLogs();
  const pid_t rank0 = world.process(0).pid();
  const long before_kib = ResidentKiB(rank0);

  // Half announce a 2 MiB Hello, half a 2 MiB Set as their first frame; then every peer
  // trickles up to 1 MiB in rounds, without blocking on a server that stopped reading.
  std::vector<int> peers;
  for (int i = 0; i < kPeers; ++i) {
    const int fd = Connect(port);
    ASSERT_GE(fd, 0);
    peers.push_back(fd);
    const std::string header = HeaderClaiming(
        i % 2 == 0 ? rz::MessageType::kHello : rz::MessageType::kSet, 2 * 1024 * 1024);
    ::send(fd, header.data(), header.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  const std::string chunk(kChunk, 'x');
  std::vector<std::size_t> sent(kPeers, 0);
  long peak_kib = before_kib;
  const auto deadline = std::chrono::steady_clock::now() + seconds(20);
  for (bool any = true; any && std::chrono::steady_clock::now() < deadline;) {
    any = false;
    for (int i = 0; i < kPeers; ++i) {
      if (peers[i] < 0 || sent[i] >= kTrickled) {
        continue;
      }
      const ssize_t n = ::send(peers[i], chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent[i] += static_cast<std::size_t>(n);
      } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
        ::close(peers[i]);  // refused and closed: this peer is done
        peers[i] = -1;
        continue;
      }
      any = true;
    }
    peak_kib = std::max(peak_kib, ResidentKiB(rank0));
  }
  // Much of what was sent may still sit in socket buffers. Wait until rank 0 has closed every
  // peer (it refuses each from the header, drains, then closes), or its memory has grown past
  // the bound as it reads on.
  constexpr long kBoundKiB = 32 * 1024;  // the peers' bytes alone are 200 MiB
  const auto closed_by = std::chrono::steady_clock::now() + seconds(20);
  std::vector<pollfd> open;
  for (int fd : peers) {
    if (fd >= 0) {
      open.push_back({fd, POLLIN, 0});
    }
  }
  while (!open.empty() && peak_kib - before_kib < kBoundKiB &&
         std::chrono::steady_clock::now() < closed_by) {
    ::poll(open.data(), open.size(), 100);
    for (auto it = open.begin(); it != open.end();) {
      char drop[4096];
      if (it->revents != 0 && ::recv(it->fd, drop, sizeof(drop), MSG_DONTWAIT) <= 0 &&
          errno != EAGAIN) {
        it = open.erase(it);  // end of stream or reset: rank 0 let go of this peer
      } else {
        ++it;
      }
    }
    peak_kib = std::max(peak_kib, ResidentKiB(rank0));
  }
  EXPECT_TRUE(open.empty()) << open.size() << " peers still open";
  for (int fd : peers) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  EXPECT_LT(peak_kib - before_kib, kBoundKiB)
      << "RSS " << before_kib << " KiB before the flood, " << peak_kib << " KiB at its peak";

  const auto metrics = HttpGet("http://127.0.0.1:" + std::to_string(world.metrics_port(0)) +
                               "/metrics");
  ASSERT_TRUE(metrics.has_value());
  const std::string family = "ringleader_sidecar_refused_connections_total";
  EXPECT_EQ(SeriesValue(metrics->body, family + "{reason=\"bad_frame\"}"), kPeers / 2)
      << metrics->body;
  EXPECT_EQ(SeriesValue(metrics->body, family + "{reason=\"protocol_violation\"}"), kPeers / 2);

  world.Start(1);
  const auto exits = world.WaitAll(seconds(60));
  for (const auto& [rank, exit] : exits) {
    ASSERT_TRUE(exit.has_value()) << "rank " << rank << " still running\n" << world.AllLogs();
    EXPECT_TRUE(exit->exited() && exit->exit_code == 0) << "rank " << rank << "\n"
                                                        << world.AllLogs();
  }
}

}  // namespace
}  // namespace ringleader::testing
