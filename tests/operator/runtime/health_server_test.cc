// The probe endpoints over a real socket on 127.0.0.1, asked with cpprestsdk's client.
#include "operator/runtime/health_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

// After gtest: cpprestsdk defines a U() macro that clashes with gtest's template parameters.
#include <cpprest/http_client.h>

#include <mutex>
#include <stdexcept>

namespace ringleader::runtime {
namespace {

namespace http = web::http;

struct Answer {
  int code = 0;
  std::string body;
};

Answer Get(int port, const std::string& path, const http::method& method = http::methods::GET) {
  http::client::http_client_config config;
  config.set_timeout(std::chrono::seconds(10));
  http::client::http_client client("http://127.0.0.1:" + std::to_string(port), config);
  const http::http_response response = client.request(method, path).get();
  return {response.status_code(), response.extract_string(true).get()};
}

// What the server's readiness callback says, changed by the test.
class Readiness {
 public:
  std::string operator()() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (throw_) {
      throw std::runtime_error("cache exploded");
    }
    return reason_;
  }
  void Set(const std::string& reason, bool throws = false) {
    const std::lock_guard<std::mutex> lock(mutex_);
    reason_ = reason;
    throw_ = throws;
  }

 private:
  std::mutex mutex_;
  std::string reason_ = "caches not synced";
  bool throw_ = false;
};

TEST(HealthServerTest, PortZeroPicksAFreePort) {
  HealthServer server("127.0.0.1", 0, [] { return std::string(); });
  EXPECT_GT(server.port(), 0);
  EXPECT_LE(server.port(), 65535);
  EXPECT_EQ(Get(server.port(), "/healthz").code, 200);
}

TEST(HealthServerTest, HealthzIsOkWithoutALivenessCallbackEvenWhileNotReady) {
  Readiness readiness;
  HealthServer server("127.0.0.1", 0, [&readiness] { return readiness(); });
  const Answer answer = Get(server.port(), "/healthz");
  EXPECT_EQ(answer.code, 200);
  EXPECT_EQ(answer.body, "ok");
}

// Regression: /healthz answered "ok" whatever state the controller was in.
TEST(HealthServerTest, HealthzFollowsTheLivenessCallbackWithTheReasonOn503) {
  Readiness readiness;
  readiness.Set("");
  Readiness liveness;
  liveness.Set("worker 1 has been reconciling default/a for 601s");
  HealthServer server("127.0.0.1", 0, [&readiness] { return readiness(); },
                      [&liveness] { return liveness(); });

  Answer answer = Get(server.port(), "/healthz");
  EXPECT_EQ(answer.code, 503);
  EXPECT_EQ(answer.body, "worker 1 has been reconciling default/a for 601s");
  EXPECT_EQ(Get(server.port(), "/readyz").code, 200) << "readiness is its own callback";

  liveness.Set("");
  answer = Get(server.port(), "/healthz");
  EXPECT_EQ(answer.code, 200);
  EXPECT_EQ(answer.body, "ok");

  liveness.Set("", true);
  answer = Get(server.port(), "/healthz");
  EXPECT_EQ(answer.code, 503);
  EXPECT_EQ(answer.body, "liveness check failed: cache exploded");
}

TEST(HealthServerTest, ReadyzFollowsTheCallbackWithTheReasonOn503) {
  Readiness readiness;
  HealthServer server("127.0.0.1", 0, [&readiness] { return readiness(); });

  Answer answer = Get(server.port(), "/readyz");
  EXPECT_EQ(answer.code, 503);
  EXPECT_EQ(answer.body, "caches not synced");

  readiness.Set("");
  answer = Get(server.port(), "/readyz");
  EXPECT_EQ(answer.code, 200);
  EXPECT_EQ(answer.body, "ok");

  readiness.Set("lost the API server");
  answer = Get(server.port(), "/readyz?verbose=1");
  EXPECT_EQ(answer.code, 503);
  EXPECT_EQ(answer.body, "lost the API server");
}

TEST(HealthServerTest, AThrowingReadinessCheckIsNotReady) {
  Readiness readiness;
  readiness.Set("", true);
  HealthServer server("127.0.0.1", 0, [&readiness] { return readiness(); });
  const Answer answer = Get(server.port(), "/readyz");
  EXPECT_EQ(answer.code, 503);
  EXPECT_EQ(answer.body, "readiness check failed: cache exploded");
  // The server keeps serving after the exception.
  EXPECT_EQ(Get(server.port(), "/healthz").code, 200);
}

TEST(HealthServerTest, EverythingElseIs404) {
  HealthServer server("127.0.0.1", 0, [] { return std::string(); });
  for (const char* path : {"/", "/metrics", "/healthz/extra", "/readyzz", "/HEALTHZ"}) {
    EXPECT_EQ(Get(server.port(), path).code, 404) << path;
  }
}

TEST(HealthServerTest, ListensOnEveryAddressWhenHostIsEmpty) {
  HealthServer server("", 0, [] { return std::string(); });
  EXPECT_EQ(Get(server.port(), "/healthz").code, 200);  // reached through 127.0.0.1
}

TEST(HealthServerTest, APortTakenByAnotherSocketThrowsNamingTheAddress) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  const std::string address = "127.0.0.1:" + std::to_string(port);
  try {
    HealthServer server("127.0.0.1", port, [] { return std::string(); });
    ADD_FAILURE() << "listened on " << address << " while another socket holds it";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(address), std::string::npos) << error.what();
  }
  ::close(fd);
}

TEST(HealthServerTest, APortOutOfRangeThrows) {
  EXPECT_THROW(HealthServer("127.0.0.1", 70000, [] { return std::string(); }), std::runtime_error);
}

TEST(HealthServerTest, StopsServingWhenDestroyed) {
  int port = 0;
  {
    HealthServer server("127.0.0.1", 0, [] { return std::string(); });
    port = server.port();
    EXPECT_EQ(Get(port, "/healthz").code, 200);
  }
  EXPECT_THROW(Get(port, "/healthz"), http::http_exception);
}

}  // namespace
}  // namespace ringleader::runtime
