// Reports of the trainers' collectives, and rank 0's comparison of them (training_report.h).
#include "sidecar/service/training_report.h"

#include <algorithm>
#include <cmath>
#include <exception>
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
  return json{{"cells", std::move(array)}}.dump();
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
    return report;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<contract::TrainingSummary> CompareTrainingReports(
    const std::map<int, std::string>& reports) {
  struct Reporting {
    double timed_bytes = 0;
    std::vector<std::pair<int, double>> ranks;  // rank, its bus bandwidth
  };
  std::map<std::pair<std::string, std::string>, Reporting> cells;
  for (const auto& [rank, text] : reports) {
    const std::optional<TrainingReport> report = DecodeTrainingReport(text);
    if (rank < 0 || !report) {
      continue;
    }
    for (const ReportCell& cell : report->cells) {
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
