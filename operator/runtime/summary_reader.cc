// GET /summary from the rank-0 sidecar and its conversion into the job's communication status.
#include "operator/runtime/summary_reader.h"

#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>

#include <cmath>
#include <cstdint>
#include <system_error>
#include <vector>
#include <exception>
#include <limits>

#include "operator/api/quantity.h"
#include "sidecar/contract/contract.h"
#include "sidecar/contract/summary.h"

namespace ringleader::runtime {
namespace {

namespace http = web::http;
using http::client::http_client;
using http::client::http_client_config;

// Matches the contract's own limit; a longer body is not read to its end.
constexpr std::size_t kMaxBodyBytes = 64 * 1024;
constexpr std::size_t kReadChunk = 16 * 1024;

std::string HostPort(const std::string& pod_ip, int port) {
  const std::string host = pod_ip.find(':') != std::string::npos ? "[" + pod_ip + "]" : pod_ip;
  return host + ":" + std::to_string(port);
}

// Reads at most kMaxBodyBytes + kReadChunk bytes, so an endless body cannot exhaust memory. The
// buffer holds bytes, as the body stream does: a char buffer would be a type pun UBSan reports.
std::string ReadBoundedBody(const http::http_response& response) {
  concurrency::streams::container_buffer<std::vector<std::uint8_t>> buffer;
  const concurrency::streams::istream body = response.body();
  while (buffer.collection().size() <= kMaxBodyBytes) {
    if (body.read(buffer, kReadChunk).get() == 0) {
      break;
    }
  }
  const std::vector<std::uint8_t>& bytes = buffer.collection();
  return std::string(bytes.begin(), bytes.end());
}

// Bytes per second as status holds them: whole, in an int64 (nullopt past that).
std::optional<std::int64_t> WholeBytes(double bytes_per_second) {
  const double bytes = std::round(bytes_per_second);
  if (bytes >= static_cast<double>(std::numeric_limits<std::int64_t>::max())) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(bytes);
}

std::optional<api::TrainingCommunicationStatus> ToTrainingStatus(const contract::TrainingSummary& training,
                                                                 std::string* problem) {
  api::TrainingCommunicationStatus status;
  status.collective = training.collective;
  status.size = training.size;
  const std::optional<std::int64_t> bytes = WholeBytes(training.bus_bandwidth);
  if (!bytes) {
    *problem = "training.busBandwidthBytesPerSecond: too large";
    return std::nullopt;
  }
  status.bus_bandwidth_bytes = *bytes;
  status.bus_bandwidth = api::FormatBandwidth(training.bus_bandwidth);
  status.ranks_reporting = training.ranks_reporting;
  if (training.slowest_rank && training.slowest_rank_bus_bandwidth) {
    const std::optional<std::int64_t> slowest = WholeBytes(*training.slowest_rank_bus_bandwidth);
    if (!slowest) {
      *problem = "training.slowestRankBusBandwidthBytesPerSecond: too large";
      return std::nullopt;
    }
    status.slowest_rank = std::to_string(*training.slowest_rank);
    status.slowest_rank_bus_bandwidth_bytes = *slowest;
    status.slowest_rank_bus_bandwidth = api::FormatBandwidth(*training.slowest_rank_bus_bandwidth);
  }
  return status;
}

std::optional<api::CommunicationStatus> ToStatus(const contract::Summary& summary,
                                                 std::string* problem) {
  api::CommunicationStatus status;
  status.backend = summary.backend;
  status.preflight = summary.preflight;
  if (!summary.last_probe_time.empty()) {
    status.last_probe_time = api::ParseTime(summary.last_probe_time);
    if (!status.last_probe_time) {
      *problem = "lastProbeTime: out of range, got \"" + summary.last_probe_time + "\"";
      return std::nullopt;
    }
  }
  if (summary.all_reduce_bus_bandwidth) {
    const std::optional<std::int64_t> bytes = WholeBytes(*summary.all_reduce_bus_bandwidth);
    if (!bytes) {
      *problem = "allReduceBusBandwidthBytesPerSecond: too large";
      return std::nullopt;
    }
    status.last_all_reduce_bus_bandwidth_bytes = *bytes;
    status.last_all_reduce_bus_bandwidth = api::FormatBandwidth(*summary.all_reduce_bus_bandwidth);
  }
  if (summary.slowest_rank) {
    status.slowest_rank = std::to_string(*summary.slowest_rank);
  }
  status.transport = summary.transport;
  status.stall = summary.stall;  // for the planner's Stalled condition, not status
  if (summary.training) {
    status.training = ToTrainingStatus(*summary.training, problem);
    if (!status.training) {
      return std::nullopt;
    }
  }
  // The column: the trainers' own figure, else the preflight's at its largest size (the monitor's
  // probes use a small message and would read far lower), else the last probe's.
  if (status.training) {
    status.bus_bandwidth = status.training->bus_bandwidth;
  } else if (summary.preflight_all_reduce_bus_bandwidth) {
    status.bus_bandwidth = api::FormatBandwidth(*summary.preflight_all_reduce_bus_bandwidth);
  } else {
    status.bus_bandwidth = status.last_all_reduce_bus_bandwidth;
  }
  return status;
}

class HttpSummaryReader : public SummaryReader {
 public:
  explicit HttpSummaryReader(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  std::optional<api::CommunicationStatus> Read(const std::string& pod_ip, int port,
                                               std::string* error) override {
    std::string address;
    std::string problem;
    try {
      address = HostPort(pod_ip, port);
      std::optional<api::CommunicationStatus> status = Fetch(address, port, &problem);
      if (status) {
        return status;
      }
    } catch (const std::exception& e) {
      problem = e.what();
    } catch (...) {
      problem = "unknown error";
    }
    if (error != nullptr) {
      try {
        *error = "summary from " + address + ": " + problem;
      } catch (...) {
        // Out of memory while describing the failure; the nullopt still says it failed.
      }
    }
    return std::nullopt;
  }

 private:
  std::optional<api::CommunicationStatus> Fetch(const std::string& address, int port,
                                                std::string* problem) {
    if (address.empty() || address.front() == ':') {
      *problem = "no Pod IP";
      return std::nullopt;
    }
    if (port < 1 || port > 65535) {
      *problem = "port must lie within 1-65535";
      return std::nullopt;
    }
    http_client_config config;
    config.set_timeout(timeout_);
    http_client client(web::uri("http://" + address), config);
    http::http_response response;
    try {
      response = client.request(http::methods::GET, std::string(contract::endpoint::kSummary)).get();
    } catch (const http::http_exception& e) {
      *problem = e.error_code() == std::errc::timed_out
                     ? "no answer within " + std::to_string(timeout_.count()) + " ms (" + e.what() + ")"
                     : std::string(e.what());
      return std::nullopt;
    }
    if (response.status_code() != http::status_codes::OK) {
      *problem = "HTTP " + std::to_string(response.status_code());
      return std::nullopt;
    }
    if (response.headers().content_length() > kMaxBodyBytes) {
      *problem = "body of " + std::to_string(response.headers().content_length()) +
                 " bytes is over the limit of " + std::to_string(kMaxBodyBytes);
      return std::nullopt;
    }
    std::string body;
    try {
      body = ReadBoundedBody(response);
    } catch (const http::http_exception& e) {
      *problem = std::string("reading the body: ") + e.what();
      return std::nullopt;
    }
    const std::optional<contract::Summary> summary = contract::SummaryFromJson(body, problem);
    if (!summary) {
      return std::nullopt;
    }
    return ToStatus(*summary, problem);
  }

  const std::chrono::milliseconds timeout_;
};

}  // namespace

std::unique_ptr<SummaryReader> MakeHttpSummaryReader(std::chrono::milliseconds timeout) {
  return std::make_unique<HttpSummaryReader>(timeout);
}

}  // namespace ringleader::runtime
