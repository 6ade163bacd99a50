// The example trainer's settings: the torch.distributed env:// contract (MASTER_ADDR,
// MASTER_PORT, RANK, WORLD_SIZE, nothing else from the environment) plus a few flags.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ringleader::examples {

// A missing or malformed variable or flag; the message names it. The trainer exits 2.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A deliberate failure for tests of failure policies: exit with `code` when step `step` begins,
// on one rank or all, in one attempt or all.
struct InjectedExit {
  int step = 1;
  int code = 1;
  std::optional<int> rank;     // --fail-rank; unset: every rank
  std::optional<int> attempt;  // --fail-attempt; unset: every attempt
};

struct TrainerConfig {
  std::string master_addr;
  std::uint16_t master_port = 0;
  int rank = 0;
  int world_size = 1;

  int steps = 20;
  double learning_rate = 0.5;
  std::uint64_t seed = 1;
  std::uint64_t samples = 4096;
  // Bounds bootstrap (store connect, join, Gloo mesh) and every collective: a vanished peer
  // ends the run within about this long at worst.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  // Simulated compute per step, so a demo (or a test) can watch a run in progress.
  std::chrono::milliseconds step_delay{0};
  // The attempt this run belongs to (--attempt, e.g. from the Pod's ringleader.dev/attempt label).
  std::optional<int> attempt;
  std::optional<InjectedExit> injected_exit;

  // Whether this rank exits deliberately when `step` begins.
  bool ExitsAtStep(int step) const;
};

// Looks a variable up: nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// `args` excludes argv[0]. Throws ConfigError.
TrainerConfig ParseTrainerConfig(const std::vector<std::string>& args, const EnvLookup& env);

inline constexpr std::string_view kTrainerUsage =
    "usage: ringleader-example-trainer [--steps N] [--lr X] [--seed S] [--samples N]\n"
    "                                  [--timeout-seconds S] [--step-delay-ms MS]\n"
    "                                  [--exit-code-at-step STEP:CODE [--fail-rank R]\n"
    "                                   [--fail-attempt A --attempt N]]\n"
    "reads MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE (torch.distributed env://)\n";

}  // namespace ringleader::examples
