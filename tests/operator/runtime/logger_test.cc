// Structured logs: JSON lines that parse with their fields, the text form, and whole lines
// under concurrent writers.
#include "operator/runtime/logger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "operator/api/trainingjob.h"

namespace ringleader::runtime {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

const std::regex kTimestamp(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)");

TEST(LoggerTest, WritesOneJsonObjectPerLineWithItsFields) {
  std::ostringstream out;
  Logger logger(LogFormat::kJson, &out);
  logger.Info("reconciled", {{"job", "default/llama"}, {"workers", 4}, {"took", 0.25}});
  logger.Warn("slow api");
  logger.Error("apply failed", {{"error", "409 Conflict"}});

  const std::vector<std::string> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 3u);
  const json first = json::parse(lines[0]);
  EXPECT_EQ(first["level"], "info");
  EXPECT_EQ(first["msg"], "reconciled");
  EXPECT_EQ(first["job"], "default/llama");
  EXPECT_EQ(first["workers"], 4);
  EXPECT_EQ(first["took"], 0.25);
  EXPECT_EQ(json::parse(lines[1])["level"], "warn");
  EXPECT_EQ(json::parse(lines[1]).size(), 3u);  // ts, level, msg and nothing else
  EXPECT_EQ(json::parse(lines[2])["level"], "error");
  EXPECT_EQ(json::parse(lines[2])["error"], "409 Conflict");
  // ts, level and msg come first, in that order, for people reading the raw lines.
  EXPECT_THAT(lines[0], MatchesRegex(R"(\{"ts":"[^"]+","level":"info","msg":"reconciled",.*)"));
}

TEST(LoggerTest, TimestampIsRfc3339UtcWithMillisecondsAndNow) {
  std::ostringstream out;
  Logger logger(LogFormat::kJson, &out);
  const auto before = std::chrono::system_clock::now();
  logger.Info("tick");
  const auto after = std::chrono::system_clock::now();
  const std::string ts = json::parse(out.str())["ts"].get<std::string>();
  EXPECT_TRUE(std::regex_match(ts, kTimestamp)) << ts;
  // ParseTime keeps whole seconds; the three digits after the point add the milliseconds.
  const std::optional<api::Time> seconds = api::ParseTime(ts);
  ASSERT_TRUE(seconds.has_value()) << ts;
  const api::Time logged = *seconds + std::chrono::milliseconds(std::stoi(ts.substr(20, 3)));
  EXPECT_GE(logged, std::chrono::floor<std::chrono::milliseconds>(before));
  EXPECT_LE(logged, after);
}

TEST(LoggerTest, AFieldCannotHideTheReservedKeys) {
  std::ostringstream out;
  Logger logger(LogFormat::kJson, &out);
  logger.Info("real", {{"msg", "fake"}, {"level", "debug"}});
  const json line = json::parse(out.str());
  EXPECT_EQ(line["msg"], "real");
  EXPECT_EQ(line["level"], "info");
  EXPECT_EQ(line["field.msg"], "fake");
  EXPECT_EQ(line["field.level"], "debug");
}

TEST(LoggerTest, MessagesWithQuotesNewlinesAndBadUtf8StayOneParsableLine) {
  std::ostringstream out;
  Logger logger(LogFormat::kJson, &out);
  logger.Error("line one\nline \"two\" \xff", {{"detail", std::string("\xc3\x28")}});
  const std::vector<std::string> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 1u);
  const json line = json::parse(lines[0]);
  EXPECT_THAT(line["msg"].get<std::string>(), HasSubstr("line one\nline \"two\""));
}

TEST(LoggerTest, ANonObjectFieldsValueIsKeptUnderFields) {
  std::ostringstream out;
  Logger logger(LogFormat::kJson, &out);
  logger.Info("odd", json::array({1, 2}));
  EXPECT_EQ(json::parse(out.str())["fields"], json::array({1, 2}));
}

TEST(LoggerTest, TextFormatIsTimestampLevelMessageAndKeyValues) {
  std::ostringstream out;
  Logger logger(LogFormat::kText, &out);
  logger.Warn("queue is deep", {{"depth", 120}, {"key", "default/llama"}, {"reason", "two words"},
                                {"ok", true}});
  logger.Info("plain");
  const std::vector<std::string> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 2u);
  const std::string ts = lines[0].substr(0, lines[0].find(' '));
  EXPECT_TRUE(std::regex_match(ts, kTimestamp)) << lines[0];
  // Fields follow in key order; a value with a space is quoted.
  EXPECT_EQ(lines[0].substr(ts.size()),
            " WARN queue is deep depth=120 key=default/llama ok=true reason=\"two words\"");
  EXPECT_EQ(lines[1].substr(lines[1].find(' ')), " INFO plain");
}

TEST(LoggerTest, TextFormatKeepsAMultiLineMessageOnOneLine) {
  std::ostringstream out;
  Logger logger(LogFormat::kText, &out);
  logger.Error("first\nsecond", {{"empty", ""}});
  const std::vector<std::string> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr(" ERROR first\\nsecond empty=\"\""));
}

TEST(LoggerTest, ConcurrentWritersNeverInterleaveLines) {
  std::ostringstream out;
  Logger logger(LogFormat::kJson, &out);
  constexpr int kThreads = 8;
  constexpr int kLinesEach = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&logger, t] {
      for (int i = 0; i < kLinesEach; ++i) {
        logger.Info("work", {{"thread", t}, {"i", i}, {"padding", std::string(100, 'x')}});
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  const std::vector<std::string> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kThreads * kLinesEach));
  std::set<std::pair<int, int>> seen;
  for (const std::string& line : lines) {
    const json entry = json::parse(line);  // throws, failing the test, on a torn line
    seen.insert({entry["thread"].get<int>(), entry["i"].get<int>()});
  }
  EXPECT_EQ(seen.size(), lines.size());
}

}  // namespace
}  // namespace ringleader::runtime
