// The summary reader against a real sidecar-like HTTP server on 127.0.0.1: good and bad answers,
// a server slower than the timeout, and a port nobody listens on.
#include "operator/runtime/summary_reader.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

// After gtest: cpprestsdk defines a U() macro that clashes with gtest's template parameters.
#include <cpprest/http_listener.h>

#include <chrono>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "operator/api/quantity.h"

namespace ringleader::runtime {
namespace {

namespace http = web::http;
using ::testing::HasSubstr;
using web::http::experimental::listener::http_listener;

// Binds port 0 on 127.0.0.1 to learn a free port, then lets it go.
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    throw std::runtime_error("socket() failed");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot bind 127.0.0.1:0");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Stands in for a sidecar: answers GET /summary with a canned body and code, or holds every
// request unanswered (until destruction) to be slower than any client timeout.
class FakeSidecar {
 public:
  FakeSidecar(int code, std::string body, bool hold = false)
      : code_(code), body_(std::move(body)), hold_(hold) {
    for (int attempt = 0; attempt < 20 && !listener_; ++attempt) {
      const int port = FreePort();
      auto listener = std::make_unique<http_listener>(
          web::uri("http://127.0.0.1:" + std::to_string(port) + "/"));
      listener->support([this](const http::http_request& request) { Handle(request); });
      try {
        listener->open().wait();
        listener_ = std::move(listener);
        port_ = port;
      } catch (const std::exception&) {
        // Another process took the port between the probe and the listen; try another.
      }
    }
    if (!listener_) {
      throw std::runtime_error("FakeSidecar: cannot listen");
    }
  }

  ~FakeSidecar() {
    std::vector<http::http_request> held;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      held.swap(held_);
    }
    // Each reply finishes (or fails, the reader having hung up) before the listener closes;
    // a reply still pending at close would never run its continuation (a leak under ASan).
    std::vector<pplx::task<void>> replies;
    for (http::http_request& request : held) {
      replies.push_back(Reply(request, http::status_codes::OK, body_));
    }
    for (pplx::task<void>& reply : replies) {
      reply.wait();
    }
    listener_->close().wait();
  }

  int port() const { return port_; }
  std::vector<std::string> paths() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return paths_;
  }

 private:
  // A byte body: cpprestsdk's std::string overload is a type pun that UBSan reports.
  static pplx::task<void> Reply(const http::http_request& request, int code, const std::string& body) {
    http::http_response response(static_cast<http::status_code>(code));
    response.headers().set_content_type("application/json");
    response.set_body(std::vector<unsigned char>(body.begin(), body.end()));
    return request.reply(response)
        .then([](pplx::task<void> sent) {
          try {
            sent.get();
          } catch (const std::exception&) {
            // The reader gave up and hung up first.
          }
        });
  }

  void Handle(const http::http_request& request) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      paths_.push_back(request.relative_uri().to_string());
      if (hold_) {
        held_.push_back(request);
        return;
      }
    }
    if (request.relative_uri().path() != "/summary") {
      Reply(request, 404, "not found");
      return;
    }
    Reply(request, code_, body_);
  }

  const int code_;
  const std::string body_;
  const bool hold_;
  std::unique_ptr<http_listener> listener_;
  int port_ = 0;
  mutable std::mutex mutex_;
  std::vector<std::string> paths_;
  std::vector<http::http_request> held_;
};

constexpr char kFullSummary[] = R"({"backend": "nccl", "preflight": "Passed",
    "lastProbeTime": "2026-11-29T18:00:00Z", "allReduceBusBandwidthBytesPerSecond": 11800000000.6,
    "slowestRank": 3, "addedLater": true})";

TEST(SummaryReaderTest, ReadsAFullSummaryIntoTheStatus) {
  FakeSidecar sidecar(200, kFullSummary);
  std::string error;
  const std::optional<api::CommunicationStatus> status =
      MakeHttpSummaryReader()->Read("127.0.0.1", sidecar.port(), &error);
  ASSERT_TRUE(status.has_value()) << error;
  EXPECT_EQ(status->backend, "nccl");
  EXPECT_EQ(status->preflight, "Passed");
  EXPECT_EQ(status->last_probe_time, api::ParseTime("2026-11-29T18:00:00Z"));
  EXPECT_EQ(status->last_all_reduce_bus_bandwidth_bytes, 11800000001);  // rounded
  EXPECT_EQ(status->last_all_reduce_bus_bandwidth, api::FormatBandwidth(11800000000.6));
  EXPECT_EQ(status->last_all_reduce_bus_bandwidth, "11.8 GB/s");
  EXPECT_EQ(status->slowest_rank, "3");
  // No training telemetry and no preflight figure: the column shows the last probe's bandwidth.
  EXPECT_EQ(status->bus_bandwidth, "11.8 GB/s");
  EXPECT_EQ(sidecar.paths(), std::vector<std::string>{"/summary"});
}

TEST(SummaryReaderTest, ReadsTheTrainersCollectivesIntoStatusTraining) {
  FakeSidecar sidecar(200, R"({"backend": "nccl", "preflight": "Passed",
      "allReduceBusBandwidthBytesPerSecond": 2.0e10,
      "training": {"collective": "all_reduce", "size": "64MiB",
                   "busBandwidthBytesPerSecond": 110000000000.4, "ranksReporting": 4,
                   "slowestRank": 3, "slowestRankBusBandwidthBytesPerSecond": 9.05e10}})");
  std::string error;
  const std::optional<api::CommunicationStatus> status =
      MakeHttpSummaryReader()->Read("127.0.0.1", sidecar.port(), &error);
  ASSERT_TRUE(status.has_value()) << error;
  ASSERT_TRUE(status->training.has_value());
  // As the other bandwidths: the human form and whole bytes per second.
  EXPECT_EQ(*status->training, (api::TrainingCommunicationStatus{.collective = "all_reduce",
                                                                .size = "64MiB",
                                                                .bus_bandwidth = "110 GB/s",
                                                                .bus_bandwidth_bytes = 110'000'000'000,
                                                                .ranks_reporting = 4,
                                                                .slowest_rank = "3",
                                                                .slowest_rank_bus_bandwidth = "90.5 GB/s",
                                                                .slowest_rank_bus_bandwidth_bytes = 90'500'000'000}));
  // Once the trainers report, the column shows their bandwidth, not the probe's.
  EXPECT_EQ(status->last_all_reduce_bus_bandwidth, "20 GB/s");
  EXPECT_EQ(status->bus_bandwidth, "110 GB/s");
}

// The stall reaches the planner as the sidecar wrote it (its own Stalled condition, not status).
TEST(SummaryReaderTest, ReadsTheStallForThePlanner) {
  FakeSidecar sidecar(200, R"({"backend": "gloo", "preflight": "Passed",
      "stall": {"collective": "all_reduce", "bytes": 260, "sequence": 5,
                "communicator": "0x00000000000000e1", "missingRanks": [2], "missingRankCount": 1,
                "missingPods": [2], "waitingRanks": 3, "waitedSeconds": 14, "attempt": 1}})");
  std::string error;
  const std::optional<api::CommunicationStatus> status =
      MakeHttpSummaryReader()->Read("127.0.0.1", sidecar.port(), &error);
  ASSERT_TRUE(status.has_value()) << error;
  ASSERT_TRUE(status->stall.has_value());
  EXPECT_EQ(*status->stall, (contract::StallSummary{.collective = "all_reduce",
                                                    .bytes = 260,
                                                    .sequence = 5,
                                                    .communicator = "0x00000000000000e1",
                                                    .missing_ranks = {2},
                                                    .missing_rank_count = 1,
                                                    .missing_pods = {2},
                                                    .waiting_ranks = 3,
                                                    .waited_seconds = 14,
                                                    .attempt = 1}));
  // A bad stall is a bad summary, named.
  FakeSidecar bad(200, R"({"backend": "gloo", "preflight": "Passed", "stall": {"sequence": 0}})");
  EXPECT_FALSE(MakeHttpSummaryReader()->Read("127.0.0.1", bad.port(), &error).has_value());
  EXPECT_THAT(error, ::testing::HasSubstr("stall.sequence: must be an integer >= 1"));
}

TEST(SummaryReaderTest, BeforeTheTrainersReportTheColumnIsThePreflightsBandwidthNotTheMonitors) {
  FakeSidecar sidecar(200, R"({"backend": "gloo", "preflight": "Passed",
      "allReduceBusBandwidthBytesPerSecond": 2.0e8,
      "preflightAllReduceBusBandwidthBytesPerSecond": 3.9e8})");
  std::string error;
  const std::optional<api::CommunicationStatus> status =
      MakeHttpSummaryReader()->Read("127.0.0.1", sidecar.port(), &error);
  ASSERT_TRUE(status.has_value()) << error;
  EXPECT_EQ(status->last_all_reduce_bus_bandwidth, "200 MB/s");
  EXPECT_EQ(status->bus_bandwidth, "390 MB/s");
}

TEST(SummaryReaderTest, TrainingWithoutASlowestRankLeavesItEmpty) {
  FakeSidecar sidecar(200, R"({"backend": "nccl", "preflight": "",
      "training": {"collective": "all_gather", "size": "1MiB",
                   "busBandwidthBytesPerSecond": 2.5e9, "ranksReporting": 1}})");
  std::string error;
  const std::optional<api::CommunicationStatus> status =
      MakeHttpSummaryReader()->Read("127.0.0.1", sidecar.port(), &error);
  ASSERT_TRUE(status.has_value()) << error;
  ASSERT_TRUE(status->training.has_value());
  EXPECT_EQ(status->training->bus_bandwidth, "2.5 GB/s");
  EXPECT_EQ(status->training->ranks_reporting, 1);
  EXPECT_EQ(status->training->slowest_rank, "");
  EXPECT_EQ(status->training->slowest_rank_bus_bandwidth, "");
  EXPECT_EQ(status->training->slowest_rank_bus_bandwidth_bytes, 0);
}

TEST(SummaryReaderTest, AMinimalSummaryLeavesTheOptionalFieldsEmpty) {
  FakeSidecar sidecar(200, R"({"backend": "gloo", "preflight": ""})");
  std::string error;
  const std::optional<api::CommunicationStatus> status =
      MakeHttpSummaryReader()->Read("127.0.0.1", sidecar.port(), &error);
  ASSERT_TRUE(status.has_value()) << error;
  api::CommunicationStatus expected;
  expected.backend = "gloo";
  EXPECT_EQ(*status, expected);
}

struct BadAnswer {
  int code;
  std::string body;
  std::string problem;
};

TEST(SummaryReaderTest, BadAnswersAreRefusedNamingTheAddressAndTheProblem) {
  const std::vector<BadAnswer> cases = {
      {200, "{\"backend\": ", "not valid JSON"},
      {200, "", "not valid JSON"},
      {200, R"({"backend": "nccl", "preflight": "", "slowestRank": -2})", "slowestRank: must be"},
      {200, R"({"backend": "tcp", "preflight": ""})", "backend: must be"},
      {200, R"({"backend": "nccl", "preflight": "", "lastProbeTime": "1066-10-14T09:00:00Z"})",
       "lastProbeTime: out of range"},
      {200, R"({"backend": "nccl", "preflight": "", "training": {"collective": "all_reduce",
           "size": "1MiB", "busBandwidthBytesPerSecond": 1e19, "ranksReporting": 2}})",
       "training.busBandwidthBytesPerSecond: too large"},
      {200, R"({"backend": "nccl", "preflight": "", "training": {"collective": "all_reduce",
           "size": "1MiB", "busBandwidthBytesPerSecond": 1, "ranksReporting": 2, "slowestRank": 1,
           "slowestRankBusBandwidthBytesPerSecond": 1e300}})",
       "training.slowestRankBusBandwidthBytesPerSecond: too large"},
      {500, kFullSummary, "HTTP 500"},
      {404, "", "HTTP 404"},
      {200, std::string(100 * 1024, ' '), "over the limit"},
  };
  for (const BadAnswer& bad : cases) {
    FakeSidecar sidecar(bad.code, bad.body);
    std::string error;
    EXPECT_FALSE(MakeHttpSummaryReader()->Read("127.0.0.1", sidecar.port(), &error).has_value())
        << bad.body.substr(0, 80);
    EXPECT_THAT(error, HasSubstr("127.0.0.1:" + std::to_string(sidecar.port())));
    EXPECT_THAT(error, HasSubstr(bad.problem)) << bad.body.substr(0, 80);
  }
}

TEST(SummaryReaderTest, GivesUpOnASlowSidecarAfterTheTimeout) {
  FakeSidecar sidecar(200, kFullSummary, /*hold=*/true);
  const auto reader = MakeHttpSummaryReader(std::chrono::milliseconds(300));
  std::string error;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(reader->Read("127.0.0.1", sidecar.port(), &error).has_value());
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(250));
  EXPECT_LT(took, std::chrono::seconds(10));  // generous for a loaded machine, far under "never"
  EXPECT_THAT(error, HasSubstr("127.0.0.1:" + std::to_string(sidecar.port())));
  EXPECT_THAT(error, HasSubstr("no answer within 300 ms"));
}

TEST(SummaryReaderTest, AClosedPortIsAnErrorNotAnException) {
  const int port = FreePort();  // nothing listens there once FreePort returns
  std::string error;
  std::optional<api::CommunicationStatus> status;
  EXPECT_NO_THROW(status = MakeHttpSummaryReader()->Read("127.0.0.1", port, &error));
  EXPECT_FALSE(status.has_value());
  EXPECT_THAT(error, HasSubstr("summary from 127.0.0.1:" + std::to_string(port) + ": "));
}

TEST(SummaryReaderTest, ABadAddressIsAnErrorNotAnException) {
  const auto reader = MakeHttpSummaryReader();
  std::string error;
  EXPECT_FALSE(reader->Read("", 8080, &error).has_value());
  EXPECT_THAT(error, HasSubstr("no Pod IP"));
  EXPECT_FALSE(reader->Read("127.0.0.1", 0, &error).has_value());
  EXPECT_THAT(error, HasSubstr("127.0.0.1:0: port must lie within 1-65535"));
  EXPECT_FALSE(reader->Read("not a host", 8080, &error).has_value());
  EXPECT_THAT(error, HasSubstr("not a host:8080"));
  // Without an error string the failure is still just nullopt.
  EXPECT_FALSE(reader->Read("127.0.0.1", 70000).has_value());
}

}  // namespace
}  // namespace ringleader::runtime
