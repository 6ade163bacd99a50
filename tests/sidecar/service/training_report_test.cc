// Rank reports of the trainers' collectives and rank 0's comparison: the busiest cell, the
// median, the slowest rank, the collective progress entries, and reports that are missing or bad.
#include "sidecar/service/training_report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

namespace ringleader::sidecar {
namespace {

std::string Report(std::vector<ReportCell> cells) {
  TrainingReport report;
  report.cells = std::move(cells);
  return EncodeTrainingReport(report);
}

// The `size` label of 2^exponent bytes, exponent below 40.
std::string SizeLabel(int exponent) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB"};
  return std::to_string(1 << (exponent % 10)) + kUnits[exponent / 10];
}

ReportCell Cell(const std::string& collective, const std::string& size, double timed_bytes,
                double bus_bandwidth) {
  return {collective, size, timed_bytes, bus_bandwidth};
}

TEST(TrainingReportTest, RoundTripsAndKeysByRank) {
  const TrainingReport report{{Cell("all_reduce", "64MiB", 1e12, 1.1e11),
                               Cell("all_gather", "1MiB", 5e9, 3e10)},
                              {}};
  const auto decoded = DecodeTrainingReport(EncodeTrainingReport(report));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(*decoded, report);
  EXPECT_EQ(TrainingReportKey(12), "training/report/12");
}

TEST(TrainingReportTest, EncodingKeepsTheBusiestCellsWithinTheBound) {
  TrainingReport report;
  for (int i = 0; i < 40; ++i) {
    report.cells.push_back(Cell(i % 2 == 0 ? "all_reduce" : "broadcast", SizeLabel(i / 2),
                                1000.0 + i, 1e9));
  }
  report.cells.push_back(Cell("send", "1KiB", 0, 1e9));  // nothing timed: left out
  const std::string text = EncodeTrainingReport(report);
  EXPECT_LE(text.size(), kMaxReportBytes);
  const auto decoded = DecodeTrainingReport(text);
  ASSERT_TRUE(decoded.has_value());
  ASSERT_EQ(decoded->cells.size(), kMaxReportCells);
  EXPECT_EQ(decoded->cells.front().timed_bytes, 1039.0);
  EXPECT_EQ(decoded->cells.back().timed_bytes, 1008.0);
}

TEST(TrainingReportTest, BadReportsDoNotDecode) {
  const std::string good_cell =
      R"({"collective":"all_reduce","size":"1MiB","timedBytes":1,"busBandwidthBytesPerSecond":2})";
  EXPECT_TRUE(DecodeTrainingReport(R"({"cells":[)" + good_cell + "]}").has_value());
  EXPECT_TRUE(DecodeTrainingReport(R"({"cells":[]})").has_value());
  for (const std::string& bad : {
           std::string(""), std::string("not json"), std::string("[]"), std::string("{}"),
           std::string(R"({"cells":{}})"), std::string(R"({"cells":[1]})"),
           std::string(R"({"cells":[)") + good_cell + "," + good_cell + "]}",  // a cell twice
           std::string(R"({"cells":[{"collective":"allreduce","size":"1MiB","timedBytes":1,"busBandwidthBytesPerSecond":2}]})"),
           std::string(R"({"cells":[{"collective":"all_reduce","size":"3MiB","timedBytes":1,"busBandwidthBytesPerSecond":2}]})"),
           std::string(R"({"cells":[{"collective":"all_reduce","size":"32GiB","timedBytes":1,"busBandwidthBytesPerSecond":2}]})"),
           std::string(R"({"cells":[{"collective":"all_reduce","size":"1MiB","timedBytes":-1,"busBandwidthBytesPerSecond":2}]})"),
           std::string(R"({"cells":[{"collective":"all_reduce","size":"1MiB","timedBytes":"1","busBandwidthBytesPerSecond":2}]})"),
           std::string(R"({"cells":[{"collective":"all_reduce","size":"1MiB","timedBytes":1}]})"),
           std::string(R"({"cells":[{"collective":"all_reduce","size":"1MiB","timedBytes":1,"busBandwidthBytesPerSecond":1e999}]})"),
           std::string(kMaxReportBytes + 1, ' '),
           std::string(100000, '['),
       }) {
    EXPECT_FALSE(DecodeTrainingReport(bad).has_value()) << bad.substr(0, 200);
  }
  std::string many = R"({"cells":[)";
  for (std::size_t i = 0; i <= kMaxReportCells; ++i) {
    many += (i == 0 ? "" : ",") + std::string(R"({"collective":"all_reduce","size":")") +
            SizeLabel(static_cast<int>(i)) + R"(","timedBytes":1,"busBandwidthBytesPerSecond":2})";
  }
  EXPECT_FALSE(DecodeTrainingReport(many + "]}").has_value());
}

ReportProgress Progress(std::uint64_t communicator, std::uint32_t rank, std::uint64_t started,
                        std::uint64_t as_of_unix_ms) {
  ReportProgress progress;
  progress.communicator = communicator;
  progress.rank = rank;
  progress.ranks = 8;
  progress.started = started;
  progress.completed = started == 0 ? 0 : started - 1;
  if (started > 0) {
    progress.last_collective = "all_reduce";
    progress.last_bytes = 64 << 20;
    progress.last_started_unix_ms = as_of_unix_ms - 100;
  }
  progress.as_of_unix_ms = as_of_unix_ms;
  return progress;
}

TEST(TrainingReportTest, ProgressRoundTripsAndReadsTheDocumentedForm) {
  TrainingReport report;
  report.progress = {Progress(0x9f3c00000000beefULL, 2, 18341, 1767225604000),
                     Progress(0x9f3c00000000beefULL, 3, 0, 1767225604000)};
  const auto decoded = DecodeTrainingReport(EncodeTrainingReport(report));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(*decoded, report);
  // Written by hand from training_report.h's comment; the second rank started nothing yet.
  const auto golden = DecodeTrainingReport(R"({"cells":[],"progress":[
      {"communicator":"0x9f3c00000000beef","rank":2,"ranks":8,"started":18341,"completed":18340,
       "lastCollective":"all_reduce","lastBytes":67108864,"lastStartedUnixMs":1767225603900,
       "asOfUnixMs":1767225604000},
      {"communicator":"0x9f3c00000000beef","rank":3,"ranks":8,"started":0,"completed":0,
       "lastStartedUnixMs":0,"asOfUnixMs":1767225604000}]})");
  ASSERT_TRUE(golden.has_value());
  EXPECT_EQ(*golden, report);
  // A report without progress, as cells alone, still reads.
  const auto cells_only = DecodeTrainingReport(
      R"({"cells":[{"collective":"all_reduce","size":"1MiB","timedBytes":1,"busBandwidthBytesPerSecond":2}]})");
  ASSERT_TRUE(cells_only.has_value());
  EXPECT_TRUE(cells_only->progress.empty());
}

TEST(TrainingReportTest, ProgressKeepsTheLowestEntriesWithinTheBoundAndTheLatestOfADuplicate) {
  TrainingReport report;
  // The largest numbers each field can hold, so the byte bound is tested at its worst.
  for (std::uint32_t i = 0; i < kMaxReportProgress + 20; ++i) {
    ReportProgress progress = Progress(~std::uint64_t{0} - i, 4'294'967'294U, ~std::uint64_t{0},
                                       ~std::uint64_t{0});
    progress.ranks = 4'294'967'295U;
    progress.last_collective = "reduce_scatter";
    progress.last_bytes = ~std::uint64_t{0};
    progress.last_started_unix_ms = ~std::uint64_t{0};
    report.progress.push_back(progress);
  }
  for (int i = 0; i < static_cast<int>(kMaxReportCells); ++i) {
    report.cells.push_back(Cell("reduce_scatter", SizeLabel(i), 1e300, 1e300));
  }
  // The same communicator rank twice: the later snapshot is kept, wherever it stands.
  report.progress.push_back(Progress(1, 0, 5, 2000));
  report.progress.push_back(Progress(1, 0, 6, 3000));
  report.progress.push_back(Progress(1, 0, 4, 1000));
  const std::string text = EncodeTrainingReport(report);
  EXPECT_LE(text.size(), kMaxReportBytes);
  const auto decoded = DecodeTrainingReport(text);
  ASSERT_TRUE(decoded.has_value());
  ASSERT_EQ(decoded->progress.size(), kMaxReportProgress);
  EXPECT_EQ(decoded->progress.front(), Progress(1, 0, 6, 3000));
  EXPECT_EQ(decoded->progress.back().communicator, ~std::uint64_t{0} - (kMaxReportProgress + 20 - 1) +
                                                       (kMaxReportProgress - 2));
}

TEST(TrainingReportTest, BadProgressDoesNotDecode) {
  const std::string good =
      R"({"communicator":"0x00000000000000ff","rank":1,"ranks":2,"started":3,"completed":3,)"
      R"("lastCollective":"broadcast","lastBytes":8,"lastStartedUnixMs":10,"asOfUnixMs":20})";
  const auto with = [](const std::string& entries) { return R"({"cells":[],"progress":[)" + entries + "]}"; };
  ASSERT_TRUE(DecodeTrainingReport(with(good)).has_value());
  const auto replaced = [&good](const std::string& from, const std::string& to) {
    std::string entry = good;
    entry.replace(entry.find(from), from.size(), to);
    return entry;
  };
  for (const std::string& bad : {
           std::string(R"({"cells":[],"progress":{}})"),
           with("1"),
           with(good + "," + good),                                            // one rank twice
           with(replaced(R"("rank":1)", R"("rank":2)")),                        // not below ranks
           with(replaced(R"("ranks":2)", R"("ranks":0)")),
           with(replaced(R"("completed":3)", R"("completed":4)")),              // above started
           with(replaced(R"("lastCollective":"broadcast")", R"("lastCollective":"send")")),  // p2p
           with(replaced(R"("lastCollective":"broadcast")", R"("lastCollective":"bcast")")),
           with(replaced(R"("lastCollective":"broadcast",)", "")),              // started, no op
           with(replaced(R"("started":3,"completed":3)", R"("started":0,"completed":0)")),  // op, none started
           with(replaced("0x00000000000000ff", "0x00000000000000FF")),
           with(replaced("0x00000000000000ff", "0xff")),
           with(replaced("0x00000000000000ff", "00000000000000000ff")),
           with(replaced(R"("asOfUnixMs":20)", R"("asOfUnixMs":-20)")),
           with(replaced(R"("lastBytes":8)", R"("lastBytes":8.5)")),
       }) {
    EXPECT_FALSE(DecodeTrainingReport(bad).has_value()) << bad;
  }
  std::string many;
  for (std::size_t i = 0; i <= kMaxReportProgress; ++i) {
    char hash[19];
    std::snprintf(hash, sizeof(hash), "0x%016zx", i);
    many += (i == 0 ? "" : ",") + replaced("0x00000000000000ff", hash);
  }
  EXPECT_FALSE(DecodeTrainingReport(with(many)).has_value());
}

TEST(TrainingReportTest, PicksTheCellWithTheMostTimedBytesOverAllRanks) {
  // all_gather moves the most on rank 0 alone, but all_reduce the most summed over the ranks.
  const std::map<int, std::string> reports = {
      {0, Report({Cell("all_gather", "1MiB", 100, 5), Cell("all_reduce", "64MiB", 60, 10)})},
      {1, Report({Cell("all_reduce", "64MiB", 60, 8)})},
      {2, Report({Cell("all_reduce", "64MiB", 60, 12)})},
  };
  const auto summary = CompareTrainingReports(reports);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->collective, "all_reduce");
  EXPECT_EQ(summary->size, "64MiB");
  EXPECT_EQ(summary->ranks_reporting, 3);
  EXPECT_EQ(summary->bus_bandwidth, 10);
  EXPECT_EQ(summary->slowest_rank, 1);
  EXPECT_EQ(summary->slowest_rank_bus_bandwidth, 8);
}

TEST(TrainingReportTest, TheMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo) {
  const std::map<int, std::string> reports = {
      {0, Report({Cell("all_reduce", "1MiB", 1, 40)})},
      {1, Report({Cell("all_reduce", "1MiB", 1, 10)})},
      {2, Report({Cell("all_reduce", "1MiB", 1, 20)})},
      {3, Report({Cell("all_reduce", "1MiB", 1, 30)})},
  };
  const auto summary = CompareTrainingReports(reports);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->bus_bandwidth, 25);
  EXPECT_EQ(summary->slowest_rank, 1);
}

TEST(TrainingReportTest, OneRankReportingNamesNoSlowestRank) {
  const auto summary =
      CompareTrainingReports({{5, Report({Cell("broadcast", "4KiB", 1e6, 7e9)})}});
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->ranks_reporting, 1);
  EXPECT_EQ(summary->bus_bandwidth, 7e9);
  EXPECT_FALSE(summary->slowest_rank.has_value());
  EXPECT_FALSE(summary->slowest_rank_bus_bandwidth.has_value());
}

TEST(TrainingReportTest, TiesGoToTheLowerNameAndTheLowerRank) {
  const std::map<int, std::string> reports = {
      {0, Report({Cell("broadcast", "1MiB", 10, 5), Cell("all_reduce", "2MiB", 10, 5)})},
      {1, Report({Cell("broadcast", "1MiB", 10, 5), Cell("all_reduce", "2MiB", 10, 5)})},
  };
  const auto summary = CompareTrainingReports(reports);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->collective, "all_reduce");
  EXPECT_EQ(summary->slowest_rank, 0);
}

TEST(TrainingReportTest, BadAndMissingReportsAreSkipped) {
  const std::map<int, std::string> reports = {
      {0, Report({Cell("all_reduce", "1MiB", 10, 40)})},
      {1, "garbage"},
      {2, R"({"cells":[{"collective":"all_reduce","size":"1MiB","timedBytes":1e30,"busBandwidthBytesPerSecond":-1}]})"},
      {4, Report({Cell("all_reduce", "1MiB", 10, 20)})},
      {-1, Report({Cell("all_reduce", "1MiB", 10, 1)})},
  };
  const auto summary = CompareTrainingReports(reports);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->ranks_reporting, 2);
  EXPECT_EQ(summary->slowest_rank, 4);
  EXPECT_EQ(summary->bus_bandwidth, 30);
  EXPECT_FALSE(CompareTrainingReports(std::map<int, std::string>{}).has_value());
  EXPECT_FALSE(CompareTrainingReports({{0, "garbage"}, {1, Report({})}}).has_value());
}

TEST(TrainingReportTest, TheSummaryPassesTheOperatorsChecks) {
  const auto summary = CompareTrainingReports({{0, Report({Cell("reduce_scatter", "16GiB", 1, 2)})},
                                               {1, Report({Cell("reduce_scatter", "16GiB", 1, 3)})}});
  ASSERT_TRUE(summary.has_value());
  contract::Summary whole;
  whole.backend = "nccl";
  whole.training = summary;
  std::string error;
  const auto parsed = contract::SummaryFromJson(contract::SummaryToJson(whole).dump(), &error);
  ASSERT_TRUE(parsed.has_value()) << error;
  EXPECT_EQ(parsed->training, summary);
}

}  // namespace
}  // namespace ringleader::sidecar
