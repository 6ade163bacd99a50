// Reports of the trainers' collectives, and rank 0's comparison of them (training_report.h).
#include "sidecar/service/training_report.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "sidecar/profiler/snapshot_protocol.h"
#include "sidecar/service/sidecar_metrics.h"

namespace ringleader::sidecar {
namespace {

using nlohmann::json;

bool IsCollectiveLabel(const std::string& text) {
  for (std::size_t op = 0; op < profiler::kOpCount; ++op) {
    if (text == profiler::OpName(static_cast<profiler::Op>(op))) {
      return true;
    }
  }
  return false;
}

// The op named `text` when it is a collective (not send or recv).
std::optional<profiler::Op> CollectiveOp(const std::string& text) {
  for (std::size_t index = 0; index < profiler::kOpCount; ++index) {
    const auto op = static_cast<profiler::Op>(index);
    if (profiler::IsCollective(op) && text == profiler::OpName(op)) {
      return op;
    }
  }
  return std::nullopt;
}

bool IsSizeLabel(const std::string& text) {
  for (std::uint64_t bytes = 1; bytes <= kMaxSizeBucketBytes; bytes <<= 1) {
    if (text == SizeBucket(bytes)) {
      return true;
    }
  }
  return false;
}

std::optional<double> NonNegative(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) {
    return std::nullopt;
  }
  const double value = it->get<double>();
  if (!std::isfinite(value) || value < 0) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::string> Label(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) {
    return std::nullopt;
  }
  return it->get<std::string>();
}

std::optional<ReportCell> ReadCell(const json& value) {
  if (!value.is_object()) {
    return std::nullopt;
  }
  ReportCell cell;
  const auto collective = Label(value, "collective");
  const auto size = Label(value, "size");
  const auto timed_bytes = NonNegative(value, "timedBytes");
  const auto bus_bandwidth = NonNegative(value, "busBandwidthBytesPerSecond");
  if (!collective || !IsCollectiveLabel(*collective) || !size || !IsSizeLabel(*size) ||
      !timed_bytes || !bus_bandwidth) {
    return std::nullopt;
  }
  return ReportCell{*collective, *size, *timed_bytes, *bus_bandwidth};
}

// A JSON integer >= 0 (up to 2^64 - 1), or nullopt.
std::optional<std::uint64_t> Unsigned(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end()) {
    return std::nullopt;
  }
  if (it->is_number_unsigned()) {
    return it->get<std::uint64_t>();
  }
  if (it->is_number_integer() && it->get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(it->get<std::int64_t>());
  }
  return std::nullopt;
}

// "0x" and 16 lower-case hex digits (contract::CommunicatorHex), or nullopt.
std::optional<std::uint64_t> CommunicatorHash(const json& object) {
  const std::optional<std::string> text = Label(object, "communicator");
  if (!text || text->size() != 18 || text->compare(0, 2, "0x") != 0) {
    return std::nullopt;
  }
  std::uint64_t hash = 0;
  for (std::size_t i = 2; i < text->size(); ++i) {
    const char c = (*text)[i];
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) {
      return std::nullopt;
    }
    hash = (hash << 4) | static_cast<std::uint64_t>(digit);
  }
  return hash;
}

std::optional<ReportProgress> ReadProgress(const json& value) {
  if (!value.is_object()) {
    return std::nullopt;
  }
  ReportProgress progress;
  const auto communicator = CommunicatorHash(value);
  const auto rank = Unsigned(value, "rank");
  const auto ranks = Unsigned(value, "ranks");
  const auto started = Unsigned(value, "started");
  const auto completed = Unsigned(value, "completed");
  const auto last_started = Unsigned(value, "lastStartedUnixMs");
  const auto as_of = Unsigned(value, "asOfUnixMs");
  constexpr std::uint64_t kMaxRanks = std::numeric_limits<std::uint32_t>::max();
  if (!communicator || !rank || !ranks || *ranks < 1 || *ranks > kMaxRanks || *rank >= *ranks ||
      !started || !completed || *completed > *started || !last_started || !as_of) {
    return std::nullopt;
  }
  progress.communicator = *communicator;
  progress.rank = static_cast<std::uint32_t>(*rank);
  progress.ranks = static_cast<std::uint32_t>(*ranks);
  progress.started = *started;
  progress.completed = *completed;
  progress.last_started_unix_ms = *last_started;
  progress.as_of_unix_ms = *as_of;
  const bool has_last = value.contains("lastCollective") || value.contains("lastBytes");
  if (has_last != (*started > 0)) {
    return std::nullopt;
  }
  if (has_last) {
    const auto collective = Label(value, "lastCollective");
    const auto bytes = Unsigned(value, "lastBytes");
    if (!collective || !CollectiveOp(*collective) || !bytes) {
      return std::nullopt;
    }
    progress.last_collective = *collective;
    progress.last_bytes = *bytes;
  }
  return progress;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

}  // namespace

std::string TrainingReportKey(int rank) { return "training/report/" + std::to_string(rank); }

std::string EncodeTrainingReport(const TrainingReport& report) {
  std::vector<const ReportCell*> cells;
  for (const ReportCell& cell : report.cells) {
    if (cell.timed_bytes > 0) {
      cells.push_back(&cell);
    }
  }
  std::stable_sort(cells.begin(), cells.end(), [](const ReportCell* a, const ReportCell* b) {
    return a->timed_bytes > b->timed_bytes;
  });
  cells.resize(std::min(cells.size(), kMaxReportCells));
  json array = json::array();
  for (const ReportCell* cell : cells) {
    array.push_back({{"collective", cell->collective},
                     {"size", cell->size},
                     {"timedBytes", cell->timed_bytes},
                     {"busBandwidthBytesPerSecond", cell->bus_bandwidth}});
  }
  std::vector<const ReportProgress*> entries;
  for (const ReportProgress& entry : report.progress) {
    entries.push_back(&entry);
  }
  // One entry per (communicator, rank), the latest: two processes may claim one for a moment
  // while a restarted trainer's old connection has not closed yet.
  std::sort(entries.begin(), entries.end(), [](const ReportProgress* a, const ReportProgress* b) {
    return std::tie(a->communicator, a->rank, b->as_of_unix_ms) <
           std::tie(b->communicator, b->rank, a->as_of_unix_ms);
  });
  entries.erase(std::unique(entries.begin(), entries.end(),
                            [](const ReportProgress* a, const ReportProgress* b) {
                              return a->communicator == b->communicator && a->rank == b->rank;
                            }),
                entries.end());
  entries.resize(std::min(entries.size(), kMaxReportProgress));
  json progress = json::array();
  for (const ReportProgress* entry : entries) {
    json value = {{"communicator", contract::CommunicatorHex(entry->communicator)},
                  {"rank", entry->rank},
                  {"ranks", entry->ranks},
                  {"started", entry->started},
                  {"completed", entry->completed},
                  {"lastStartedUnixMs", entry->last_started_unix_ms},
                  {"asOfUnixMs", entry->as_of_unix_ms}};
    if (entry->started > 0) {
      value["lastCollective"] = entry->last_collective;
      value["lastBytes"] = entry->last_bytes;
    }
    progress.push_back(std::move(value));
  }
  return json{{"cells", std::move(array)}, {"progress", std::move(progress)}}.dump();
}

std::optional<TrainingReport> DecodeTrainingReport(std::string_view text) {
  if (text.size() > kMaxReportBytes) {
    return std::nullopt;
  }
  try {
    const json object = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!object.is_object()) {
      return std::nullopt;
    }
    const auto cells = object.find("cells");
    if (cells == object.end() || !cells->is_array() || cells->size() > kMaxReportCells) {
      return std::nullopt;
    }
    TrainingReport report;
    std::set<std::pair<std::string, std::string>> seen;
    for (const json& value : *cells) {
      std::optional<ReportCell> cell = ReadCell(value);
      if (!cell || !seen.emplace(cell->collective, cell->size).second) {
        return std::nullopt;
      }
      report.cells.push_back(std::move(*cell));
    }
    if (const auto progress = object.find("progress"); progress != object.end()) {
      if (!progress->is_array() || progress->size() > kMaxReportProgress) {
        return std::nullopt;
      }
      std::set<std::pair<std::uint64_t, std::uint32_t>> ranks;
      for (const json& value : *progress) {
        std::optional<ReportProgress> entry = ReadProgress(value);
        if (!entry || !ranks.emplace(entry->communicator, entry->rank).second) {
          return std::nullopt;
        }
        report.progress.push_back(std::move(*entry));
      }
    }
    return report;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::map<int, TrainingReport> DecodeTrainingReports(const std::map<int, std::string>& reports) {
  std::map<int, TrainingReport> decoded;
  for (const auto& [rank, text] : reports) {
    if (std::optional<TrainingReport> report = DecodeTrainingReport(text); rank >= 0 && report) {
      decoded.emplace(rank, std::move(*report));
    }
  }
  return decoded;
}

std::optional<contract::TrainingSummary> CompareTrainingReports(
    const std::map<int, std::string>& reports) {
  return CompareTrainingReports(DecodeTrainingReports(reports));
}

std::optional<contract::TrainingSummary> CompareTrainingReports(
    const std::map<int, TrainingReport>& reports) {
  struct Reporting {
    double timed_bytes = 0;
    std::vector<std::pair<int, double>> ranks;  // rank, its bus bandwidth
  };
  std::map<std::pair<std::string, std::string>, Reporting> cells;
  for (const auto& [rank, report] : reports) {
    if (rank < 0) {
      continue;
    }
    for (const ReportCell& cell : report.cells) {
      if (cell.timed_bytes <= 0) {
        continue;
      }
      Reporting& reporting = cells[{cell.collective, cell.size}];
      reporting.timed_bytes += cell.timed_bytes;
      reporting.ranks.emplace_back(rank, cell.bus_bandwidth);
    }
  }
  // The map is ordered by (collective, size), so the first of equal totals wins.
  const auto busiest =
      std::max_element(cells.begin(), cells.end(), [](const auto& a, const auto& b) {
        return a.second.timed_bytes < b.second.timed_bytes;
      });
  if (busiest == cells.end()) {
    return std::nullopt;
  }
  const Reporting& reporting = busiest->second;
  contract::TrainingSummary summary;
  summary.collective = busiest->first.first;
  summary.size = busiest->first.second;
  summary.ranks_reporting = static_cast<int>(reporting.ranks.size());
  std::vector<double> bandwidths;
  for (const auto& [rank, bandwidth] : reporting.ranks) {
    bandwidths.push_back(bandwidth);
  }
  summary.bus_bandwidth = Median(std::move(bandwidths));
  if (reporting.ranks.size() >= 2) {
    // Ranks arrive in ascending order, so the first of equal bandwidths is the lower rank.
    const auto slowest = std::min_element(
        reporting.ranks.begin(), reporting.ranks.end(),
        [](const auto& a, const auto& b) { return a.second < b.second; });
    summary.slowest_rank = slowest->first;
    summary.slowest_rank_bus_bandwidth = slowest->second;
  }
  return summary;
}

}  // namespace ringleader::sidecar
