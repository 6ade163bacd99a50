// libFuzzer target for the rendezvous server as peers meet it: fuzzer bytes go over a real TCP
// connection to a real StoreServer, either straight away (the handshake under attack) or after
// a proper token handshake (store ops from a hostile but authenticated rank). The server must
// answer only well-formed frames, close the connection once the client has finished sending,
// and never crash or stall; ASan watches the server's thread.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "sidecar/rendezvous/auth.h"
#include "sidecar/rendezvous/protocol.h"
#include "sidecar/rendezvous/store_server.h"

namespace {

namespace rz = ringleader::rendezvous;

constexpr std::string_view kToken = "fuzz-token";
constexpr std::uint32_t kWorldSize = 4;

// The server, replaced every kInputsPerServer inputs so the keys fuzzer sessions store do not
// pile up over a long run.
constexpr int kInputsPerServer = 2000;

std::unique_ptr<rz::StoreServer>& CurrentServer() {
  static std::unique_ptr<rz::StoreServer> server;
  return server;
}

// The server for the next input (a fresh one every kInputsPerServer inputs).
rz::StoreServer& ServerForNextInput() {
  static int inputs = 0;
  std::unique_ptr<rz::StoreServer>& server = CurrentServer();
  if (!server || ++inputs % kInputsPerServer == 0) {
    server.reset();
    rz::ServerOptions options;
    options.bind_address = "127.0.0.1";
    options.token = std::string(kToken);
    options.world_size = kWorldSize;
    options.handshake_timeout = std::chrono::milliseconds(2000);
    options.max_frame_payload = 64 * 1024;
    server = std::make_unique<rz::StoreServer>(options);
  }
  return *server;
}

int Connect(std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = -1;
  // A busy machine can run short of ephemeral ports for a moment (EADDRNOTAVAIL); only a server
  // that refuses for seconds on end is a finding.
  for (int attempt = 0; fd < 0; ++attempt) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      const int error = errno;
      ::close(fd);
      fd = -1;
      if (attempt == 100) {
        std::fprintf(stderr, "connect to the server failed: %s\n", std::strerror(error));
        std::abort();  // the server stopped accepting
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return fd;
}

void SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent <= 0) {
      return;  // the server closed on us, which is allowed
    }
    bytes.remove_prefix(static_cast<std::size_t>(sent));
  }
}

// Prints what tells a stalled event loop from a lost connection: the server's counters, both
// ends of the connection as the kernel sees them (who owns each, what sits unread), whether a
// fresh connection still gets a Challenge, and every thread's stack.
void ReportStall(int fd) {
  const rz::ServerStats stats = CurrentServer()->Stats();
  std::fprintf(stderr, "server stalled: accepted %llu authenticated %llu open %llu pending %llu\n",
               static_cast<unsigned long long>(stats.accepted),
               static_cast<unsigned long long>(stats.authenticated),
               static_cast<unsigned long long>(stats.open),
               static_cast<unsigned long long>(stats.pending));
  std::fflush(stderr);
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
  const std::string client_port = std::to_string(ntohs(local.sin_port));
  std::system(("ss -tanpie '( sport = :" + client_port + " or dport = :" + client_port + " )' >&2")
                  .c_str());
  const int probe = Connect(CurrentServer()->port());
  const std::string hello = rz::EncodeMessage(rz::Hello{0, kWorldSize});
  ::send(probe, hello.data(), hello.size(), MSG_NOSIGNAL);
  pollfd answer{probe, POLLIN, 0};
  std::fprintf(
      stderr, "a fresh connection's Hello was %s\n",
      ::poll(&answer, 1, 2000) > 0 ? "answered (the event loop runs)" : "not answered within 2 s");
  ::close(probe);
  std::system(("gdb -p " + std::to_string(::getpid()) +
               " -batch -ex 'thread apply all bt 30' 2>/dev/null >&2")
                  .c_str());
}

// Reads frames until the server closes; aborts on a malformed reply or a stall. With
// `until_type`, returns the first frame of that type instead (or nullopt on close).
std::optional<rz::Frame> ReadReplies(int fd, rz::FrameDecoder& decoder,
                                     std::optional<rz::MessageType> until_type) {
  char buffer[4096];
  // A server that neither answers nor closes within 8 s has stalled (libFuzzer -timeout is 10 s
  // in CI). The wait is a poll() against a deadline, not SO_RCVTIMEO: a recv with that option
  // is never restarted after a signal, and libFuzzer's -timeout alarm is one (SIGALRM), so an
  // EINTR once passed for a stall.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  while (true) {
    while (auto frame = decoder.Next()) {
      if (!rz::DecodeMessage(*frame).ok()) {
        std::abort();  // the server sent a frame it cannot decode itself
      }
      if (until_type && frame->type == *until_type) {
        return frame;
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd readable{fd, POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(std::max<long long>(left.count(), 0)));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready <= 0) {
      ReportStall(fd);
      std::abort();
    }
    const ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
    if (got == 0 || (got < 0 && errno == ECONNRESET)) {
      return std::nullopt;
    }
    if (got < 0) {
      std::fprintf(stderr, "recv from the server failed: %s\n", std::strerror(errno));
      std::abort();
    }
    if (!decoder.Feed(std::string_view(buffer, static_cast<std::size_t>(got)))) {
      std::abort();  // the server's own bytes do not frame
    }
  }
}

// With `early`, the Hello carries an early proof (the way ranks join); else it asks for a
// Challenge, answered by a Proof.
bool Authenticate(int fd, rz::FrameDecoder& decoder, std::uint32_t rank, bool early) {
  if (early) {
    rz::Hello hello{rank, kWorldSize};
    hello.sent_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
    hello.nonce = rz::MakeNonce().value();
    hello.early_proof = rz::ComputeEarlyProof(kToken, hello);
    SendAll(fd, rz::EncodeMessage(hello));
    return ReadReplies(fd, decoder, rz::MessageType::kWelcome).has_value();
  }
  SendAll(fd, rz::EncodeMessage(rz::Hello{rank, kWorldSize}));
  const auto challenge_frame = ReadReplies(fd, decoder, rz::MessageType::kChallenge);
  if (!challenge_frame) {
    return false;
  }
  const auto challenge = rz::Challenge::Decode(challenge_frame->payload);
  if (!challenge.ok()) {
    std::abort();
  }
  SendAll(fd, rz::EncodeMessage(rz::Proof{rz::ComputeProof(kToken, challenge.value().nonce, rank)}));
  return ReadReplies(fd, decoder, rz::MessageType::kWelcome).has_value();
}

}  // namespace

// OpenSSL sets up its global state (providers, configuration) on first use; doing that here, not
// during the first input, keeps it from being reported as that input's leak.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  const auto nonce = rz::MakeNonce();
  if (!nonce) {
    std::abort();
  }
  rz::ComputeProof(kToken, *nonce, 0);
  for (const bool early : {false, true}) {
    const int fd = Connect(ServerForNextInput().port());
    rz::FrameDecoder decoder;
    if (!Authenticate(fd, decoder, 0, early)) {
      std::abort();
    }
    ::close(fd);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) {
    return 0;
  }
  // The first byte: bit 0 chooses an authenticated session, bit 1 its early proof (else the
  // challenge), the next bits the rank.
  const bool authenticated = (data[0] & 1) != 0;
  const bool early = (data[0] & 2) != 0;
  const std::uint32_t rank = (data[0] >> 2) % kWorldSize;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  const int fd = Connect(ServerForNextInput().port());
  rz::FrameDecoder decoder(2 * 1024 * 1024);
  if (authenticated && !Authenticate(fd, decoder, rank, early)) {
    std::abort();  // a correct proof must be welcomed
  }
  SendAll(fd, stream);
  ::shutdown(fd, SHUT_WR);
  ReadReplies(fd, decoder, std::nullopt);
  ::close(fd);
  return 0;
}
