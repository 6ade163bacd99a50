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

}  // namespace
}  // namespace ringleader::examples
