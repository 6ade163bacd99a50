// The example trainer's settings: the four env:// variables and the flags, each error naming its
// variable.
#include "examples/trainer/trainer_config.h"

#include <map>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ringleader::examples {
namespace {

using ::testing::HasSubstr;

std::map<std::string, std::string> GoodEnv() {
  return {{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}, {"RANK", "3"}, {"WORLD_SIZE", "4"}};
}

TrainerConfig Parse(const std::map<std::string, std::string>& env,
                    const std::vector<std::string>& args = {}) {
  return ParseTrainerConfig(args, [&](std::string_view name) -> std::optional<std::string> {
    const auto it = env.find(std::string(name));
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

std::string ErrorOf(const std::map<std::string, std::string>& env,
                    const std::vector<std::string>& args = {}) {
  try {
    Parse(env, args);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(TrainerConfigTest, ReadsTheEnvContractAndFlags) {
  const TrainerConfig config = Parse(GoodEnv(), {"--steps", "7", "--lr", "0.25", "--seed", "9"});
  EXPECT_EQ(config.master_addr, "10.0.0.1");
  EXPECT_EQ(config.master_port, 29500);
  EXPECT_EQ(config.rank, 3);
  EXPECT_EQ(config.world_size, 4);
  EXPECT_EQ(config.steps, 7);
  EXPECT_DOUBLE_EQ(config.learning_rate, 0.25);
  EXPECT_EQ(config.seed, 9u);
}

TEST(TrainerConfigTest, NamesEachMissingVariable) {
  for (const char* name : {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"}) {
    auto env = GoodEnv();
    env.erase(name);
    EXPECT_THAT(ErrorOf(env), HasSubstr(std::string(name) + " is not set")) << name;
  }
}

TEST(TrainerConfigTest, NamesMalformedValues) {
  auto env = GoodEnv();
  env["MASTER_PORT"] = "70000";
  EXPECT_THAT(ErrorOf(env), HasSubstr("MASTER_PORT: \"70000\""));
  env = GoodEnv();
  env["WORLD_SIZE"] = "four";
  EXPECT_THAT(ErrorOf(env), HasSubstr("WORLD_SIZE: \"four\""));
  env = GoodEnv();
  env["RANK"] = "4";
  EXPECT_THAT(ErrorOf(env), HasSubstr("RANK: 4 is not below WORLD_SIZE 4"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--steps", "0"}), HasSubstr("--steps"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--lr", "-1"}), HasSubstr("--lr"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--bogus", "1"}), HasSubstr("unknown flag: --bogus"));
}

TEST(TrainerConfigTest, ReadsAnInjectedExitNarrowedToARankAndAnAttempt) {
  TrainerConfig config = Parse(GoodEnv(), {"--exit-code-at-step", "5:42", "--fail-rank", "3", "--fail-attempt",
                                           "0", "--attempt", "0"});
  ASSERT_TRUE(config.injected_exit.has_value());
  EXPECT_EQ(config.injected_exit->step, 5);
  EXPECT_EQ(config.injected_exit->code, 42);
  EXPECT_FALSE(config.ExitsAtStep(4));
  EXPECT_TRUE(config.ExitsAtStep(5));
  config.attempt = 1;
  EXPECT_FALSE(config.ExitsAtStep(5)) << "another attempt";
  config.attempt = 0;
  config.rank = 2;
  EXPECT_FALSE(config.ExitsAtStep(5)) << "another rank";
  // Without --fail-rank or --fail-attempt every rank exits, in every attempt.
  EXPECT_TRUE(Parse(GoodEnv(), {"--exit-code-at-step", "1:3"}).ExitsAtStep(1));
  EXPECT_FALSE(Parse(GoodEnv()).ExitsAtStep(1));
}

TEST(TrainerConfigTest, LingersAfterTrainingOnEveryRankButRankZero) {
  EXPECT_EQ(Parse(GoodEnv()).LingerAfterTraining(), std::chrono::seconds(0));
  const TrainerConfig worker = Parse(GoodEnv(), {"--linger-after-training-seconds", "120"});
  EXPECT_EQ(worker.LingerAfterTraining(), std::chrono::seconds(120));
  auto env = GoodEnv();
  env["RANK"] = "0";
  EXPECT_EQ(Parse(env, {"--linger-after-training-seconds", "120"}).LingerAfterTraining(),
            std::chrono::seconds(0));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--linger-after-training-seconds", "-1"}),
              HasSubstr("--linger-after-training-seconds: \"-1\" is not an integer in [0, 86400]"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--linger-after-training-seconds", "1m"}),
              HasSubstr("--linger-after-training-seconds: \"1m\""));
}

TEST(TrainerConfigTest, NamesMalformedInjectedExits) {
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--exit-code-at-step", "5"}), HasSubstr("is not STEP:CODE"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--exit-code-at-step", "5:0"}), HasSubstr("--exit-code-at-step CODE: \"0\""));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--exit-code-at-step", "5:256"}), HasSubstr("CODE: \"256\""));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--exit-code-at-step", "0:3"}), HasSubstr("STEP: \"0\""));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--steps", "3", "--exit-code-at-step", "4:3"}), HasSubstr("past --steps 3"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--fail-rank", "1"}), HasSubstr("--exit-code-at-step, which is not given"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--exit-code-at-step", "1:3", "--fail-attempt", "0"}),
              HasSubstr("--fail-attempt needs --attempt N"));
}

TEST(TrainerConfigTest, ReadsAnInjectedStallOfOneRankNarrowedToAnAttempt) {
  TrainerConfig config = Parse(GoodEnv(), {"--stall-at-step", "5", "--stall-rank", "2", "--stall-attempt", "0",
                                           "--attempt", "0"});
  ASSERT_TRUE(config.injected_stall.has_value());
  EXPECT_EQ(config.injected_stall->step, 5);
  EXPECT_EQ(config.injected_stall->rank, 2);
  EXPECT_EQ(config.injected_stall->attempt, 0);
  config.rank = 2;
  EXPECT_FALSE(config.StallsAtStep(4));
  EXPECT_TRUE(config.StallsAtStep(5));
  EXPECT_FALSE(config.StallsAtStep(6));
  config.attempt = 1;
  EXPECT_FALSE(config.StallsAtStep(5)) << "another attempt";
  config.attempt = 0;
  config.rank = 3;
  EXPECT_FALSE(config.StallsAtStep(5)) << "another rank";
  // Without --stall-attempt the rank stalls in every attempt; without the flags, never.
  auto env = GoodEnv();
  env["RANK"] = "1";
  EXPECT_TRUE(Parse(env, {"--stall-at-step", "1", "--stall-rank", "1"}).StallsAtStep(1));
  EXPECT_FALSE(Parse(env).StallsAtStep(1));
  EXPECT_FALSE(Parse(env).injected_stall.has_value());
}

TEST(TrainerConfigTest, NamesMalformedInjectedStalls) {
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--stall-at-step", "5"}), HasSubstr("--stall-at-step and --stall-rank go together"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--stall-rank", "1"}), HasSubstr("--stall-at-step and --stall-rank go together"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--stall-at-step", "0", "--stall-rank", "1"}),
              HasSubstr("--stall-at-step: \"0\" is not an integer in [1, 100000000]"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--stall-at-step", "2", "--stall-rank", "-1"}), HasSubstr("--stall-rank: \"-1\""));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--stall-at-step", "2", "--stall-rank", "4"}),
              HasSubstr("--stall-rank: 4 is not below WORLD_SIZE 4"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--steps", "3", "--stall-at-step", "4", "--stall-rank", "1"}),
              HasSubstr("--stall-at-step: step 4 is past --steps 3"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--stall-attempt", "0"}), HasSubstr("--stall-at-step, which is not given"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--stall-at-step", "2", "--stall-rank", "1", "--stall-attempt", "0"}),
              HasSubstr("--stall-attempt needs --attempt N"));
}

TEST(TrainerConfigTest, DrivesTheProfilerPluginNcclWouldLoadUnlessTurnedOff) {
  auto env = GoodEnv();
  EXPECT_FALSE(Parse(env).profiler_plugin.has_value());
  env["NCCL_PROFILER_PLUGIN"] = "/var/run/ringleader/profiler/libnccl-profiler-ringleader.so";
  EXPECT_EQ(Parse(env).profiler_plugin, env["NCCL_PROFILER_PLUGIN"]);
  EXPECT_FALSE(Parse(env, {"--profiler-stand-in", "off"}).profiler_plugin.has_value());
  EXPECT_TRUE(Parse(env, {"--profiler-stand-in", "on"}).profiler_plugin.has_value());
  for (const char* off : {"", "none", "NONE"}) {
    env["NCCL_PROFILER_PLUGIN"] = off;
    EXPECT_FALSE(Parse(env).profiler_plugin.has_value()) << "\"" << off << "\"";
  }
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--profiler-stand-in", "maybe"}),
              HasSubstr("--profiler-stand-in: \"maybe\" is not on or off"));
}

TEST(TrainerConfigTest, ReadsTheNodeCountForTheStandInWithoutEverFailingOnIt) {
  auto env = GoodEnv();
  EXPECT_EQ(Parse(env).nnodes, 1);
  env["PET_NNODES"] = "3";
  EXPECT_EQ(Parse(env).nnodes, 3);
  for (const char* bad : {"0", "-2", "three", ""}) {
    env["PET_NNODES"] = bad;
    EXPECT_EQ(Parse(env).nnodes, 1) << "\"" << bad << "\"";
  }
}

TEST(TrainerConfigTest, SlowsTheReportedCollectivesOfTheChosenRankOnly) {
  TrainerConfig config = Parse(GoodEnv(), {"--stand-in-slowdown", "3:12.5"});
  ASSERT_TRUE(config.stand_in_slowdown.has_value());
  EXPECT_EQ(config.stand_in_slowdown->rank, 3);
  EXPECT_DOUBLE_EQ(config.ReportedTimeFactor(), 12.5);
  config.rank = 2;
  EXPECT_DOUBLE_EQ(config.ReportedTimeFactor(), 1);
  EXPECT_DOUBLE_EQ(Parse(GoodEnv()).ReportedTimeFactor(), 1);
}

TEST(TrainerConfigTest, NamesMalformedSlowdowns) {
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--stand-in-slowdown", "3"}), HasSubstr("is not RANK:FACTOR"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--stand-in-slowdown", "x:2"}),
              HasSubstr("--stand-in-slowdown RANK: \"x\""));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--stand-in-slowdown", "1:fast"}),
              HasSubstr("--stand-in-slowdown FACTOR: \"fast\" is not a positive number"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--stand-in-slowdown", "1:0.5"}),
              HasSubstr("--stand-in-slowdown FACTOR: \"0.5\" is not in [1, 1000000]"));
  EXPECT_THAT(ErrorOf(GoodEnv(), {"--stand-in-slowdown", "1:2e6"}), HasSubstr("is not in [1, 1000000]"));
}

// The operator's trainerStore Sidecar sets TORCHELASTIC_USE_AGENT_STORE=True and the attempt;
// only the exact "True" counts, as PyTorch compares with str(True).
TEST(TrainerConfigTest, IsAClientOfTheAgentStoreOnlyWhenToldExactlyTrue) {
  auto env = GoodEnv();
  EXPECT_FALSE(Parse(env).use_agent_store);
  env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  env["TORCHELASTIC_RESTART_COUNT"] = "3";
  const TrainerConfig config = Parse(env);
  EXPECT_TRUE(config.use_agent_store);
  EXPECT_EQ(config.restart_count, 3);
  for (const char* other : {"true", "1", "TRUE", ""}) {
    env["TORCHELASTIC_USE_AGENT_STORE"] = other;
    EXPECT_FALSE(Parse(env).use_agent_store) << other;
  }
}

TEST(TrainerConfigTest, NamesAMissingOrMalformedRestartCountWithTheAgentStore) {
  auto env = GoodEnv();
  env["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  EXPECT_THAT(ErrorOf(env), HasSubstr("TORCHELASTIC_RESTART_COUNT is not set"));
  env["TORCHELASTIC_RESTART_COUNT"] = "-1";
  EXPECT_THAT(ErrorOf(env), HasSubstr("TORCHELASTIC_RESTART_COUNT: \"-1\""));
}

}  // namespace
}  // namespace ringleader::examples
