#include "tests/support/test_environment.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <random>
#include <stdexcept>
#include <string>

namespace ringleader::testing {

std::filesystem::path MakeTempDir(std::string_view prefix) {
  std::random_device random;
  auto dir = std::filesystem::temp_directory_path() /
             (std::string(prefix) + "-" + std::to_string(random()));
  std::filesystem::create_directories(dir);
  return dir;
}

namespace {

// A socket bound to 127.0.0.1 on a port the kernel chose; the port is reserved while it is open.
class BoundSocket {
 public:
  BoundSocket() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    if (fd_ < 0) {
      throw std::runtime_error("FreePort: socket failed");
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
      ::close(fd_);
      throw std::runtime_error("FreePort: cannot bind 127.0.0.1:0");
    }
    port_ = ntohs(addr.sin_port);
  }
  BoundSocket(const BoundSocket&) = delete;
  BoundSocket& operator=(const BoundSocket&) = delete;
  ~BoundSocket() { ::close(fd_); }

  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

}  // namespace

int FreePort() { return BoundSocket().port(); }

std::vector<int> FreePorts(int count) {
  std::vector<std::unique_ptr<BoundSocket>> held;
  std::vector<int> ports;
  for (int i = 0; i < count; ++i) {
    held.push_back(std::make_unique<BoundSocket>());
    ports.push_back(held.back()->port());
  }
  return ports;
}

}  // namespace ringleader::testing
