#include "examples/trainer/trainer_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "sidecar/contract/contract.h"

namespace ringleader::examples {
namespace {

namespace env = contract::env;

std::string Quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

// A whole decimal integer in [min, max]; `what` names the variable or flag in the error.
template <typename T>
T ParseInteger(std::string_view what, std::string_view text, T min, T max) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    throw ConfigError(std::string(what) + ": " + Quoted(text) + " is not an integer in [" +
                      std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return value;
}

double ParsePositiveDouble(std::string_view what, std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value) || value <= 0) {
    throw ConfigError(std::string(what) + ": " + Quoted(text) + " is not a positive number");
  }
  return value;
}

std::string Require(const EnvLookup& lookup, std::string_view name) {
  auto value = lookup(name);
  if (!value || value->empty()) {
    throw ConfigError(std::string(name) + " is not set (the trainer needs MASTER_ADDR, " +
                      "MASTER_PORT, RANK and WORLD_SIZE, as torch.distributed's env:// does)");
  }
  return *value;
}

// "STEP:CODE", both whole numbers: a step from 1 and an exit code from 1 to 255.
InjectedExit ParseInjectedExit(std::string_view flag, std::string_view text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    throw ConfigError(std::string(flag) + ": " + Quoted(text) + " is not STEP:CODE (e.g. 5:3)");
  }
  InjectedExit out;
  out.step = ParseInteger<int>(std::string(flag) + " STEP", text.substr(0, colon), 1, 100'000'000);
  out.code = ParseInteger<int>(std::string(flag) + " CODE", text.substr(colon + 1), 1, 255);
  return out;
}

constexpr double kMaxSlowdown = 1e6;

// "RANK:FACTOR": a rank and a factor from 1 to kMaxSlowdown.
StandInSlowdown ParseSlowdown(std::string_view flag, std::string_view text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    throw ConfigError(std::string(flag) + ": " + Quoted(text) + " is not RANK:FACTOR (e.g. 1:10)");
  }
  StandInSlowdown out;
  out.rank = ParseInteger<int>(std::string(flag) + " RANK", text.substr(0, colon), 0, 65'535);
  const std::string factor_flag = std::string(flag) + " FACTOR";
  out.factor = ParsePositiveDouble(factor_flag, text.substr(colon + 1));
  if (out.factor < 1 || out.factor > kMaxSlowdown) {
    throw ConfigError(factor_flag + ": " + Quoted(text.substr(colon + 1)) +
                      " is not in [1, 1000000]");
  }
  return out;
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

// PET_NNODES when it is a whole number from 1, else 1: only the profiler stand-in reads it, and
// it must never stop training.
int NodesOrOne(const std::optional<std::string>& text) {
  int value = 0;
  if (!text) {
    return 1;
  }
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  return ec == std::errc() && end == text->data() + text->size() && value >= 1 ? value : 1;
}

}  // namespace

bool TrainerConfig::ExitsAtStep(int step) const {
  return injected_exit.has_value() && injected_exit->step == step &&
         (!injected_exit->rank.has_value() || *injected_exit->rank == rank) &&
         (!injected_exit->attempt.has_value() || injected_exit->attempt == attempt);
}

bool TrainerConfig::StallsAtStep(int step) const {
  return injected_stall.has_value() && injected_stall->step == step && injected_stall->rank == rank &&
         (!injected_stall->attempt.has_value() || injected_stall->attempt == attempt);
}

std::chrono::seconds TrainerConfig::LingerAfterTraining() const {
  return rank == 0 ? std::chrono::seconds(0) : linger_after_training;
}

double TrainerConfig::ReportedTimeFactor() const {
  return stand_in_slowdown.has_value() && stand_in_slowdown->rank == rank
             ? stand_in_slowdown->factor
             : 1.0;
}

TrainerConfig ParseTrainerConfig(const std::vector<std::string>& args, const EnvLookup& lookup) {
  TrainerConfig config;
  std::optional<int> fail_rank;
  std::optional<int> fail_attempt;
  std::optional<int> stall_step;
  std::optional<int> stall_rank;
  std::optional<int> stall_attempt;
  bool stand_in = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (i + 1 >= args.size()) {
      throw ConfigError("unknown flag or missing value: " + flag + "\n" + std::string(kTrainerUsage));
    }
    const std::string& value = args[++i];
    if (flag == "--steps") {
      config.steps = ParseInteger<int>(flag, value, 1, 100'000'000);
    } else if (flag == "--lr") {
      config.learning_rate = ParsePositiveDouble(flag, value);
    } else if (flag == "--seed") {
      config.seed = ParseInteger<std::uint64_t>(flag, value, 0,
                                                std::numeric_limits<std::uint64_t>::max());
    } else if (flag == "--samples") {
      config.samples = ParseInteger<std::uint64_t>(flag, value, 1, 10'000'000);
    } else if (flag == "--timeout-seconds") {
      config.timeout = std::chrono::seconds(ParseInteger<int>(flag, value, 1, 86'400));
    } else if (flag == "--step-delay-ms") {
      config.step_delay = std::chrono::milliseconds(ParseInteger<int>(flag, value, 0, 3'600'000));
    } else if (flag == "--linger-after-training-seconds") {
      config.linger_after_training = std::chrono::seconds(ParseInteger<int>(flag, value, 0, 86'400));
    } else if (flag == "--attempt") {
      config.attempt = ParseInteger<int>(flag, value, 0, 1'000'000);
    } else if (flag == "--exit-code-at-step") {
      config.injected_exit = ParseInjectedExit(flag, value);
    } else if (flag == "--fail-rank") {
      fail_rank = ParseInteger<int>(flag, value, 0, 65'535);
    } else if (flag == "--fail-attempt") {
      fail_attempt = ParseInteger<int>(flag, value, 0, 1'000'000);
    } else if (flag == "--stall-at-step") {
      stall_step = ParseInteger<int>(flag, value, 1, 100'000'000);
    } else if (flag == "--stall-rank") {
      stall_rank = ParseInteger<int>(flag, value, 0, 65'535);
    } else if (flag == "--stall-attempt") {
      stall_attempt = ParseInteger<int>(flag, value, 0, 1'000'000);
    } else if (flag == "--profiler-stand-in") {
      if (value != "on" && value != "off") {
        throw ConfigError(flag + ": " + Quoted(value) + " is not on or off");
      }
      stand_in = value == "on";
    } else if (flag == "--stand-in-slowdown") {
      config.stand_in_slowdown = ParseSlowdown(flag, value);
    } else {
      throw ConfigError("unknown flag: " + flag + "\n" + std::string(kTrainerUsage));
    }
  }

  if ((fail_rank || fail_attempt) && !config.injected_exit) {
    throw ConfigError("--fail-rank and --fail-attempt narrow --exit-code-at-step, which is not given");
  }
  if (fail_attempt && !config.attempt) {
    throw ConfigError("--fail-attempt needs --attempt N, the attempt this run belongs to");
  }
  if (config.injected_exit) {
    if (config.injected_exit->step > config.steps) {
      throw ConfigError("--exit-code-at-step: step " + std::to_string(config.injected_exit->step) +
                        " is past --steps " + std::to_string(config.steps));
    }
    config.injected_exit->rank = fail_rank;
    config.injected_exit->attempt = fail_attempt;
  }

  if (stall_step.has_value() != stall_rank.has_value()) {
    throw ConfigError("--stall-at-step and --stall-rank go together: the step and the one rank "
                      "that never enters its all-reduce");
  }
  if (stall_attempt && !stall_step) {
    throw ConfigError("--stall-attempt narrows --stall-at-step, which is not given");
  }
  if (stall_attempt && !config.attempt) {
    throw ConfigError("--stall-attempt needs --attempt N, the attempt this run belongs to");
  }
  if (stall_step) {
    if (*stall_step > config.steps) {
      throw ConfigError("--stall-at-step: step " + std::to_string(*stall_step) + " is past --steps " +
                        std::to_string(config.steps));
    }
    config.injected_stall = InjectedStall{.step = *stall_step, .rank = *stall_rank, .attempt = stall_attempt};
  }

  config.master_addr = Require(lookup, env::kMasterAddr);
  config.master_port = ParseInteger<std::uint16_t>(env::kMasterPort, Require(lookup, env::kMasterPort),
                                                   1, std::numeric_limits<std::uint16_t>::max());
  config.world_size = ParseInteger<int>(env::kWorldSize, Require(lookup, env::kWorldSize), 1, 65'536);
  config.rank = ParseInteger<int>(env::kRank, Require(lookup, env::kRank), 0, 65'535);
  if (config.rank >= config.world_size) {
    throw ConfigError(std::string(env::kRank) + ": " + std::to_string(config.rank) +
                      " is not below " + std::string(env::kWorldSize) + " " +
                      std::to_string(config.world_size));
  }
  if (config.injected_stall && config.injected_stall->rank >= config.world_size) {
    throw ConfigError("--stall-rank: " + std::to_string(config.injected_stall->rank) + " is not below " +
                      std::string(env::kWorldSize) + " " + std::to_string(config.world_size));
  }
  if (config.samples < static_cast<std::uint64_t>(config.world_size)) {
    throw ConfigError("--samples: " + std::to_string(config.samples) + " is fewer than " +
                      std::string(env::kWorldSize) + " " + std::to_string(config.world_size) +
                      " (every rank needs a sample)");
  }

  // PyTorch compares with str(True), so "true" or "1" leave rank 0 hosting the store.
  config.use_agent_store = lookup(env::kTorchelasticUseAgentStore) == std::optional<std::string>("True");
  if (config.use_agent_store) {
    const auto restart_count = lookup(env::kTorchelasticRestartCount);
    if (!restart_count || restart_count->empty()) {
      throw ConfigError(std::string(env::kTorchelasticRestartCount) + " is not set (with " +
                        std::string(env::kTorchelasticUseAgentStore) +
                        "=True the trainer's keys go under /worker/attempt_<it>/, as PyTorch's are)");
    }
    config.restart_count =
        ParseInteger<int>(env::kTorchelasticRestartCount, *restart_count, 0, 1'000'000);
  }

  const auto plugin = lookup(env::kNcclProfilerPlugin);
  if (stand_in && plugin && !plugin->empty() && !EqualsIgnoringCase(*plugin, "none")) {
    config.profiler_plugin = *plugin;
  }
  config.nnodes = NodesOrOne(lookup(env::kPetNnodes));
  return config;
}

}  // namespace ringleader::examples
