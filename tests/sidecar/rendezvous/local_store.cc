#include "tests/sidecar/rendezvous/local_store.h"

#include <thread>

namespace ringleader::rendezvous::testing {

ServerOptions LocalServerOptions(const std::string& token, std::uint32_t world_size,
                                 std::uint16_t port) {
  ServerOptions options;
  options.bind_address = "127.0.0.1";
  options.port = port;
  options.token = token;
  options.world_size = world_size;
  return options;
}

ClientOptions LocalClientOptions(const std::string& token, std::uint16_t port, std::uint32_t rank,
                                 std::uint32_t world_size, std::chrono::milliseconds timeout,
                                 std::chrono::milliseconds io_timeout) {
  ClientOptions options;
  options.host = "127.0.0.1";
  options.port = port;
  options.token = token;
  options.rank = rank;
  options.world_size = world_size;
  options.deadline = std::chrono::steady_clock::now() + timeout;
  options.io_timeout = io_timeout;
  return options;
}

bool Eventually(const std::function<bool()>& cond, std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!cond()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace ringleader::rendezvous::testing
