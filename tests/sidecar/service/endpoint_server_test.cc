// The sidecar's endpoints over a real socket on 127.0.0.1, asked with cpprestsdk's client.
#include "sidecar/service/endpoint_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

// After gtest: cpprestsdk defines a U() macro that clashes with gtest's template parameters.
#include <utility>

#include <cpprest/http_client.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include <prometheus/registry.h>

#include "sidecar/service/sidecar_metrics.h"

namespace ringleader::sidecar {
namespace {

namespace http = web::http;
using ::testing::HasSubstr;

struct Answer {
  int code = 0;
  std::string body;
  std::string content_type;
  std::string allow;
};

Answer Get(int port, const std::string& path, const http::method& method = http::methods::GET) {
  http::client::http_client_config config;
  config.set_timeout(std::chrono::seconds(10));
  http::client::http_client client("http://127.0.0.1:" + std::to_string(port), config);
  const http::http_response response = client.request(method, path).get();
  Answer answer;
  answer.code = response.status_code();
  answer.content_type = response.headers().content_type();
  if (response.headers().has("Allow")) {
    answer.allow = response.headers().find("Allow")->second;
  }
  answer.body = response.extract_string(true).get();
  return answer;
}

contract::Summary PassedSummary() {
  contract::Summary summary;
  summary.backend = "nccl";
  summary.preflight = "Passed";
  summary.last_probe_time = "2026-11-29T18:00:00Z";
  summary.all_reduce_bus_bandwidth = 1.18e10;
  summary.slowest_rank = 3;
  return summary;
}

class EndpointServerTest : public ::testing::Test {
 protected:
  prometheus::Registry registry_;
  SidecarMetrics metrics_{registry_, 0, 2};
};

TEST_F(EndpointServerTest, PortZeroPicksAFreePort) {
  EndpointServer server("127.0.0.1", 0, registry_, PassedSummary);
  EXPECT_GT(server.port(), 0);
  EXPECT_LE(server.port(), 65535);
  EXPECT_EQ(Get(server.port(), "/healthz").code, 200);
}

TEST_F(EndpointServerTest, HealthzIsOkWhileNotReady) {
  EndpointServer server("127.0.0.1", 0, registry_, PassedSummary);
  const Answer answer = Get(server.port(), "/healthz");
  EXPECT_EQ(answer.code, 200);
  EXPECT_EQ(answer.body, "ok");
  EXPECT_THAT(answer.content_type, HasSubstr("text/plain"));
}

TEST_F(EndpointServerTest, ReadyzStartsNotReadyAndFollowsSetReady) {
  EndpointServer server("127.0.0.1", 0, registry_, PassedSummary);
  Answer answer = Get(server.port(), "/readyz");
  EXPECT_EQ(answer.code, 503);
  EXPECT_EQ(answer.body, "starting");

  server.SetReady(false, "preflight running");
  answer = Get(server.port(), "/readyz");
  EXPECT_EQ(answer.code, 503);
  EXPECT_EQ(answer.body, "preflight running");

  server.SetReady(true, "ignored");
  answer = Get(server.port(), "/readyz?verbose=1");
  EXPECT_EQ(answer.code, 200);
  EXPECT_EQ(answer.body, "ok");

  server.SetReady(false, "preflight failed: rank 3 all-reduce 1.2 GB/s below the 10 GB/s floor");
  answer = Get(server.port(), "/readyz");
  EXPECT_EQ(answer.code, 503);
  EXPECT_EQ(answer.body, "preflight failed: rank 3 all-reduce 1.2 GB/s below the 10 GB/s floor");

  server.SetReady(false);
  EXPECT_EQ(Get(server.port(), "/readyz").body, "not ready");
}

TEST_F(EndpointServerTest, MetricsServesTheRegistryAsPrometheusText) {
  EndpointServer server("127.0.0.1", 0, registry_, PassedSummary);
  metrics_.ObserveProbe(collectives::Collective::kAllReduce, 64 << 20, 8e9, 1.25e10, 0.008);
  metrics_.SetInfo({"nccl", "ib", "2.21.5", "gpus", "llama", "team-a"});
  const Answer answer = Get(server.port(), "/metrics");
  EXPECT_EQ(answer.code, 200);
  EXPECT_THAT(answer.content_type, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(answer.body, HasSubstr("# TYPE ringleader_sidecar_bus_bandwidth_bytes_per_second gauge"));
  EXPECT_THAT(answer.body, HasSubstr("ringleader_sidecar_bus_bandwidth_bytes_per_second{"));
  EXPECT_THAT(answer.body, HasSubstr("size=\"64MiB\""));
  EXPECT_THAT(answer.body, HasSubstr("12500000000"));
  EXPECT_THAT(answer.body, HasSubstr("ringleader_sidecar_info{"));
  EXPECT_THAT(answer.body, HasSubstr("ringleader_sidecar_preflight_state{state=\"pending\"} 1"));
}

TEST_F(EndpointServerTest, SummaryServesTheCallbacksJson) {
  EndpointServer server("127.0.0.1", 0, registry_, PassedSummary);
  const Answer answer = Get(server.port(), "/summary");
  EXPECT_EQ(answer.code, 200);
  EXPECT_THAT(answer.content_type, HasSubstr("application/json"));
  std::string error;
  const std::optional<contract::Summary> parsed = contract::SummaryFromJson(answer.body, &error);
  ASSERT_TRUE(parsed.has_value()) << error << ": " << answer.body;
  EXPECT_EQ(*parsed, PassedSummary());
}

TEST_F(EndpointServerTest, SummaryIsAskedAgainForEachRequest) {
  std::atomic<int> calls{0};
  EndpointServer server("127.0.0.1", 0, registry_, [&calls] {
    contract::Summary summary;
    summary.backend = "gloo";
    summary.slowest_rank = calls++;
    return summary;
  });
  EXPECT_THAT(Get(server.port(), "/summary").body, HasSubstr("\"slowestRank\":0"));
  EXPECT_THAT(Get(server.port(), "/summary").body, HasSubstr("\"slowestRank\":1"));
}

TEST_F(EndpointServerTest, AThrowingSummaryIs500AndTheServerKeepsServing) {
  EndpointServer server("127.0.0.1", 0, registry_,
                        []() -> contract::Summary { throw std::runtime_error("no probe yet"); });
  const Answer answer = Get(server.port(), "/summary");
  EXPECT_EQ(answer.code, 500);
  EXPECT_EQ(answer.body, "summary failed: no probe yet");
  EXPECT_EQ(Get(server.port(), "/healthz").code, 200);
}

TEST_F(EndpointServerTest, NoSummaryFunctionIs503) {
  EndpointServer server("127.0.0.1", 0, registry_, nullptr);
  EXPECT_EQ(Get(server.port(), "/summary").code, 503);
}

TEST_F(EndpointServerTest, UnknownPathsAre404) {
  EndpointServer server("127.0.0.1", 0, registry_, PassedSummary);
  for (const char* path : {"/", "/metricz", "/healthz/extra", "/readyzz", "/HEALTHZ", "/summary/x"}) {
    EXPECT_EQ(Get(server.port(), path).code, 404) << path;
  }
}

TEST_F(EndpointServerTest, OnlyGetIsAllowed) {
  EndpointServer server("127.0.0.1", 0, registry_, PassedSummary);
  server.SetReady(true);
  for (const char* path : {"/metrics", "/healthz", "/readyz", "/summary"}) {
    for (const http::method& method : {http::methods::POST, http::methods::PUT, http::methods::DEL}) {
      const Answer answer = Get(server.port(), path, method);
      EXPECT_EQ(answer.code, 405) << method << " " << path;
      EXPECT_EQ(answer.allow, "GET") << method << " " << path;
    }
  }
  EXPECT_EQ(Get(server.port(), "/nowhere", http::methods::POST).code, 404);
}

TEST_F(EndpointServerTest, ReadinessFlipsWhileScrapersAsk) {
  EndpointServer server("127.0.0.1", 0, registry_, PassedSummary);
  server.SetReady(false, "preflight running");  // before the first request, whoever runs first
  std::atomic<bool> stop{false};
  std::thread flipper([&] {
    for (int i = 0; !stop; ++i) {
      server.SetReady(i % 2 == 0, "preflight running");
      std::this_thread::yield();
    }
  });
  for (int i = 0; i < 20; ++i) {
    const Answer answer = Get(server.port(), "/readyz");
    EXPECT_TRUE((answer.code == 200 && answer.body == "ok") ||
                (answer.code == 503 && answer.body == "preflight running"))
        << answer.code << " " << answer.body;
  }
  stop = true;
  flipper.join();
}

TEST_F(EndpointServerTest, ListensOnEveryAddressWhenHostIsEmpty) {
  EndpointServer server("", 0, registry_, PassedSummary);
  EXPECT_EQ(Get(server.port(), "/healthz").code, 200);  // reached through 127.0.0.1
}

TEST_F(EndpointServerTest, ABusyPortThrowsNamingTheAddress) {
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
    EndpointServer server("127.0.0.1", port, registry_, PassedSummary);
    ADD_FAILURE() << "listened on " << address << " while another socket holds it";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr(address));
  }
  ::close(fd);
}

TEST_F(EndpointServerTest, APortOutOfRangeThrows) {
  EXPECT_THROW(EndpointServer("127.0.0.1", 70000, registry_, PassedSummary), std::runtime_error);
  EXPECT_THROW(EndpointServer("127.0.0.1", -1, registry_, PassedSummary), std::runtime_error);
}

TEST_F(EndpointServerTest, StopsServingWhenDestroyed) {
  int port = 0;
  {
    EndpointServer server("127.0.0.1", 0, registry_, PassedSummary);
    port = server.port();
    EXPECT_EQ(Get(port, "/healthz").code, 200);
  }
  EXPECT_THROW(Get(port, "/healthz"), http::http_exception);
}

}  // namespace
}  // namespace ringleader::sidecar
