#include "tests/support/test_environment.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    throw std::runtime_error("FreePort: socket failed");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0;
  ::close(fd);
  if (!ok) {
    throw std::runtime_error("FreePort: cannot bind 127.0.0.1:0");
  }
  return ntohs(addr.sin_port);
}

}  // namespace ringleader::testing
