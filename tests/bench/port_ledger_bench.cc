// Benchmarks for the port ledger: one Allocate+Release pair with N live jobs, and a rebuild from
// 10000 holders as on operator start, over a range with room for both (1024-65535).
#include "operator/ports/port_ledger.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

namespace {

using ringleader::ports::PortBlock;
using ringleader::ports::PortLedger;
using ringleader::ports::PortRange;

constexpr PortRange kBigRange{1024, 65535};

// Shaped like a Kubernetes uid, so hashing and copies cost what they do in the operator.
std::string Uid(std::int64_t n) {
  const std::string suffix = std::to_string(n);
  return "6c1f0b8e-2d4a-4e7b-9a31-" + std::string(12 - suffix.size(), '0') + suffix;
}

PortLedger LedgerWithJobs(std::int64_t jobs) {
  PortLedger ledger(kBigRange);
  for (std::int64_t job = 0; job < jobs; ++job) {
    ledger.Allocate(Uid(job));
  }
  return ledger;
}

void BM_AllocateReleasePair(benchmark::State& state) {
  PortLedger ledger = LedgerWithJobs(state.range(0));
  const std::string probe = Uid(999'999);
  for (auto _ : state) {
    benchmark::DoNotOptimize(ledger.Allocate(probe));
    ledger.Release(probe);
  }
}
BENCHMARK(BM_AllocateReleasePair)->Arg(0)->Arg(1000)->Arg(10000);

void BM_Rebuild(benchmark::State& state) {
  const PortLedger live = LedgerWithJobs(state.range(0));
  std::vector<std::pair<std::string, PortBlock>> held;
  for (std::int64_t job = 0; job < state.range(0); ++job) {
    held.emplace_back(Uid(job), *live.Find(Uid(job)));
  }
  for (auto _ : state) {
    std::vector<std::string> conflicts;
    PortLedger rebuilt = PortLedger::Rebuild(kBigRange, held, &conflicts);
    benchmark::DoNotOptimize(rebuilt);
  }
}
BENCHMARK(BM_Rebuild)->Arg(10000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
