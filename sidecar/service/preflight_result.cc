// The preflight result file: its JSON both ways, and the read that never trusts the bytes.
#include "sidecar/service/preflight_result.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "sidecar/service/contract_file.h"

namespace ringleader::sidecar {
namespace {

using nlohmann::json;

// Reads one object's members, naming `where` (the file and the path to the object) in errors.
class Members {
 public:
  Members(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) {
      throw PreflightResultError(where_ + ": must be an object");
    }
  }

  bool Bool(const char* name) const {
    const json& value = Required(name);
    if (!value.is_boolean()) {
      Fail(name, "must be true or false");
    }
    return value.get<bool>();
  }

  std::string String(const char* name) const {
    const json* value = Optional(name);
    if (value == nullptr) {
      return "";
    }
    if (!value->is_string()) {
      Fail(name, "must be a string");
    }
    return value->get<std::string>();
  }

  std::optional<std::int64_t> Int(const char* name, std::int64_t minimum, std::int64_t maximum) const {
    const json* value = Optional(name);
    if (value == nullptr) {
      return std::nullopt;
    }
    if (!value->is_number_integer() || value->get<std::int64_t>() < minimum ||
        value->get<std::int64_t>() > maximum ||
        (value->is_number_unsigned() && value->get<std::uint64_t>() >
                                            static_cast<std::uint64_t>(maximum))) {
      Fail(name, "must be an integer in " + std::to_string(minimum) + "-" + std::to_string(maximum));
    }
    return value->get<std::int64_t>();
  }

  std::optional<double> Number(const char* name) const {
    const json* value = Optional(name);
    if (value == nullptr) {
      return std::nullopt;
    }
    if (!value->is_number() || !std::isfinite(value->get<double>()) || value->get<double>() < 0) {
      Fail(name, "must be a finite number >= 0");
    }
    return value->get<double>();
  }

  const json& Required(const char* name) const {
    const json* value = Optional(name);
    if (value == nullptr) {
      Fail(name, "missing");
    }
    return *value;
  }

  const json* Optional(const char* name) const {
    const auto it = object_.find(name);
    return it == object_.end() ? nullptr : &*it;
  }

  [[noreturn]] void Fail(const char* name, const std::string& what) const {
    throw PreflightResultError(where_ + "." + name + ": " + what);
  }

  const std::string& where() const { return where_; }

 private:
  const json& object_;
  std::string where_;
};

constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();
constexpr std::int64_t kMaxSize = std::numeric_limits<std::int64_t>::max();

collectives::Collective ParseCollective(const Members& row) {
  const std::string name = row.String("collective");
  for (const collectives::Collective collective : collectives::kAllCollectives) {
    if (name == collectives::CollectiveName(collective)) {
      return collective;
    }
  }
  row.Fail("collective", "\"" + name.substr(0, 64) + "\" is not a collective this sidecar knows");
}

collectives::ProbeRow ParseRow(const json& object, const std::string& where) {
  const Members row(object, where);
  collectives::ProbeRow parsed;
  parsed.collective = ParseCollective(row);
  parsed.bytes = static_cast<std::size_t>(row.Int("bytes", 0, kMaxSize).value_or(0));
  parsed.count = static_cast<std::size_t>(row.Int("count", 0, kMaxSize).value_or(0));
  parsed.time_us = row.Number("timeUs").value_or(0);
  parsed.algbw_gbps = row.Number("algbwGbps").value_or(0);
  parsed.busbw_gbps = row.Number("busbwGbps").value_or(0);
  parsed.wrong = static_cast<std::uint64_t>(row.Int("wrong", 0, kMaxSize).value_or(0));
  parsed.slowest_rank = static_cast<int>(row.Int("slowestRank", 0, kMaxInt).value_or(0));
  return parsed;
}

}  // namespace

json PreflightResultToJson(const PreflightResult& result) {
  json document = {{"version", kPreflightResultVersion},
                   {"enabled", result.enabled},
                   {"passed", result.passed},
                   {"ranks", result.ranks},
                   {"localRanks", result.local_ranks},
                   {"seconds", result.seconds},
                   {"rdmaRequested", result.rdma_requested}};
  const auto add_text = [&](const char* name, const std::string& value) {
    if (!value.empty()) {
      document[name] = value;
    }
  };
  add_text("reason", result.reason);
  add_text("backend", result.backend);
  add_text("transport", result.transport);
  add_text("devices", result.devices);
  if (result.rdma_fallback) {
    document["rdmaFallback"] = *result.rdma_fallback;
  }
  if (result.rendezvous_seconds) {
    document["rendezvousSeconds"] = *result.rendezvous_seconds;
  }
  if (result.all_reduce_bus_bandwidth) {
    document["allReduceBusBandwidthBytesPerSecond"] = *result.all_reduce_bus_bandwidth;
  }
  if (result.slowest_rank) {
    document["slowestRank"] = *result.slowest_rank;
  }
  if (result.below_floor_row) {
    document["belowFloorRow"] = *result.below_floor_row;
  }
  json rows = json::array();
  for (const collectives::ProbeRow& row : result.rows) {
    rows.push_back({{"collective", collectives::CollectiveName(row.collective)},
                    {"bytes", row.bytes},
                    {"count", row.count},
                    {"timeUs", row.time_us},
                    {"algbwGbps", row.algbw_gbps},
                    {"busbwGbps", row.busbw_gbps},
                    {"wrong", row.wrong},
                    {"slowestRank", row.slowest_rank}});
  }
  document["rows"] = std::move(rows);
  return document;
}

PreflightResult PreflightResultFromJson(const json& document, const std::string& source) {
  const Members top(document, source);
  const json& version = top.Required("version");
  if (!version.is_number_integer() || version.get<std::int64_t>() != kPreflightResultVersion) {
    top.Fail("version", "this sidecar reads version " + std::to_string(kPreflightResultVersion) +
                            ", the file has " + version.dump().substr(0, 32));
  }
  PreflightResult result;
  result.enabled = top.Bool("enabled");
  result.passed = top.Bool("passed");
  result.reason = top.String("reason");
  result.backend = top.String("backend");
  result.transport = top.String("transport");
  result.devices = top.String("devices");
  if (const json* requested = top.Optional("rdmaRequested"); requested != nullptr) {
    result.rdma_requested = top.Bool("rdmaRequested");
  }
  if (top.Optional("rdmaFallback") != nullptr) {
    result.rdma_fallback = top.String("rdmaFallback");
  }
  result.ranks = static_cast<int>(top.Int("ranks", 0, kMaxInt).value_or(0));
  result.local_ranks = static_cast<int>(top.Int("localRanks", 1, kMaxInt).value_or(1));
  result.rendezvous_seconds = top.Number("rendezvousSeconds");
  result.seconds = top.Number("seconds").value_or(0);
  result.all_reduce_bus_bandwidth = top.Number("allReduceBusBandwidthBytesPerSecond");
  if (const auto slowest = top.Int("slowestRank", 0, kMaxInt)) {
    result.slowest_rank = static_cast<int>(*slowest);
  }
  const json& rows = top.Required("rows");
  if (!rows.is_array() || rows.size() > kMaxPreflightRows) {
    top.Fail("rows", "must be an array of at most " + std::to_string(kMaxPreflightRows) + " rows");
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    result.rows.push_back(ParseRow(rows[i], source + ".rows[" + std::to_string(i) + "]"));
  }
  if (const auto row = top.Int("belowFloorRow", 0, kMaxSize)) {
    if (static_cast<std::size_t>(*row) >= result.rows.size()) {
      top.Fail("belowFloorRow", std::to_string(*row) + " is not a row index");
    }
    result.below_floor_row = static_cast<std::size_t>(*row);
  }
  return result;
}

void WritePreflightResult(const std::string& path, const PreflightResult& result) {
  WriteFileAtomically(path, PreflightResultToJson(result).dump(2) + "\n");
}

std::optional<PreflightResult> ReadPreflightResult(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) {
      return std::nullopt;
    }
    throw PreflightResultError(path + ": cannot read: " + std::strerror(errno));
  }
  std::string text(kMaxPreflightResultBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (in.bad()) {
    throw PreflightResultError(path + ": cannot read");
  }
  if (text.size() > kMaxPreflightResultBytes) {
    throw PreflightResultError(path + ": larger than " + std::to_string(kMaxPreflightResultBytes) +
                               " bytes");
  }
  const json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    throw PreflightResultError(path + ": not JSON");
  }
  return PreflightResultFromJson(document, path);
}

}  // namespace ringleader::sidecar
