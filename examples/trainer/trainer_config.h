// The example trainer's settings: the torch.distributed env:// contract (MASTER_ADDR,
// MASTER_PORT, RANK, WORLD_SIZE), a few flags, and what the NCCL profiler plugin stand-in reads
// (NCCL_PROFILER_PLUGIN, PET_NNODES; profiler_stand_in.h).
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

// A deliberate stall for tests of stall detection: when step `step` begins, rank `rank` stops
// and never enters that step's all-reduce (it waits until it is stopped), while the other ranks
// enter it and wait for it; in one attempt or all.
struct InjectedStall {
  int step = 1;
  int rank = 0;
  std::optional<int> attempt;  // --stall-attempt; unset: every attempt
};

// A test aid: the collectives rank `rank` reports to the profiler plugin take `factor` times
// their real time (--stand-in-slowdown RANK:FACTOR), so a test can make that rank the slowest.
struct StandInSlowdown {
  int rank = 0;
  double factor = 1;
};

struct TrainerConfig {
  std::string master_addr;
  std::uint16_t master_port = 0;
  int rank = 0;
  int world_size = 1;

  // TORCHELASTIC_USE_AGENT_STORE exactly "True", as PyTorch reads it: every rank, rank 0
  // included, is a client of the store (PyTorch's TCPStore protocol) at MASTER_ADDR:MASTER_PORT
  // that someone else hosts (rank 0's sidecar), and binds nothing for the rendezvous. Otherwise
  // rank 0 hosts a store of ringleader's own protocol on MASTER_PORT.
  bool use_agent_store = false;
  // TORCHELASTIC_RESTART_COUNT, required with the agent store: its keys go under
  // /worker/attempt_<restart_count>/.
  int restart_count = 0;

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
  std::optional<InjectedStall> injected_stall;
  // A test aid for successPolicy RankZero: ranks other than 0 wait this long after their last
  // step before exiting 0, as workers that do not know training is over (rank 0 never waits).
  std::chrono::seconds linger_after_training{0};

  // The NCCL profiler plugin the stand-in drives: NCCL_PROFILER_PLUGIN, unless it is unset, empty
  // or "none" (NCCL's word for off), or --profiler-stand-in off.
  std::optional<std::string> profiler_plugin;
  // PET_NNODES (the operator sets it to the replica count), for the stand-in's communicator; 1
  // when unset or malformed, since nothing but the plugin's record reads it.
  int nnodes = 1;
  std::optional<StandInSlowdown> stand_in_slowdown;

  // Whether this rank exits deliberately when `step` begins.
  bool ExitsAtStep(int step) const;
  // Whether this rank stops before `step`'s all-reduce, never to enter it.
  bool StallsAtStep(int step) const;
  // How long this rank waits after training before it exits: linger_after_training but on rank 0.
  std::chrono::seconds LingerAfterTraining() const;
  // The factor this rank's reported collective times are multiplied by: 1 but on the slowed rank.
  double ReportedTimeFactor() const;
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
    "                                  [--stall-at-step STEP --stall-rank R\n"
    "                                   [--stall-attempt A --attempt N]]\n"
    "                                  [--profiler-stand-in on|off]\n"
    "                                  [--stand-in-slowdown RANK:FACTOR]\n"
    "                                  [--linger-after-training-seconds S]\n"
    "reads MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE (torch.distributed env://); rank 0\n"
    "serves the rendezvous store on MASTER_PORT unless TORCHELASTIC_USE_AGENT_STORE=True, when\n"
    "every rank is a client of the TCPStore there, keys under\n"
    "/worker/attempt_<TORCHELASTIC_RESTART_COUNT>/ (as PyTorch's env:// then is); with\n"
    "NCCL_PROFILER_PLUGIN set, reports each Gloo all-reduce to that NCCL profiler plugin as NCCL\n"
    "would (a stand-in: this trainer has no NCCL). --stand-in-slowdown, a test aid, multiplies\n"
    "the collective times rank RANK reports by FACTOR (1 to 1000000). With\n"
    "--linger-after-training-seconds, every rank but rank 0 waits S seconds after training\n"
    "before it exits 0 (a test aid for successPolicy RankZero). With --stall-at-step, rank R\n"
    "never enters step STEP's all-reduce and waits until it is stopped, while the others enter it\n"
    "(a test aid for stall detection; --step-delay-ms idles every rank between collectives)\n";

}  // namespace ringleader::examples
