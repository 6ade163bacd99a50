// Rank reports of the trainers' collectives and rank 0's comparison: the busiest cell, the
// median, the slowest rank, and reports that are missing or bad.
#include "sidecar/service/training_report.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace ringleader::sidecar {
namespace {

std::string Report(std::vector<ReportCell> cells) {
  return EncodeTrainingReport(TrainingReport{std::move(cells)});
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
                               Cell("all_gather", "1MiB", 5e9, 3e10)}};
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
  EXPECT_FALSE(CompareTrainingReports({}).has_value());
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
