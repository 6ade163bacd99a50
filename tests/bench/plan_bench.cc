// Planner cost: the round that creates every Pod of a job, and the steady-state re-plan of a
// running job, for 1 (the baseline) up to 1,024 replicas.
#include <benchmark/benchmark.h>

#include "operator/planner/plan.h"
#include "tests/operator/planner/fake_cluster.h"

namespace {

using ringleader::planner::MakePlan;
using ringleader::planner::Observed;
using ringleader::planner::PlannerConfig;
using ringleader::planner::testing::At;
using ringleader::planner::testing::FakeCluster;
using ringleader::planner::testing::MinimalJob;

// Observed state of a job whose ports are assigned but which has no children yet.
Observed Fresh(FakeCluster& cluster) {
  cluster.Reconcile(At(0));
  Observed observed;
  observed.job = cluster.Job();
  observed.ledger = &cluster.ledger();
  observed.fresh_token = "token";
  observed.now = At(1);
  return observed;
}

void BM_PlanCreatesAllPods(benchmark::State& state) {
  const auto replicas = static_cast<int>(state.range(0));
  FakeCluster cluster(MinimalJob("bench", replicas));
  const Observed observed = Fresh(cluster);
  const PlannerConfig config;
  for (auto _ : state) {
    benchmark::DoNotOptimize(MakePlan(observed, config));
  }
  state.SetItemsProcessed(state.iterations() * replicas);
}
BENCHMARK(BM_PlanCreatesAllPods)->Arg(1)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);

void BM_ReplanRunningJob(benchmark::State& state) {
  const auto replicas = static_cast<int>(state.range(0));
  FakeCluster cluster(MinimalJob("bench", replicas));
  cluster.ReconcileUntilStable(At(0));
  for (const auto& [name, pod] : cluster.pods()) {
    cluster.SetSidecarStarted(name, true);
  }
  cluster.SetAllPhases("Running");
  cluster.ReconcileUntilStable(At(1));
  Observed observed;
  observed.job = cluster.Job();
  for (const auto& [name, pod] : cluster.pods()) {
    observed.pods.push_back(pod);
  }
  observed.service = cluster.service();
  observed.secret = cluster.secret();
  observed.ledger = &cluster.ledger();
  observed.now = At(2);
  const PlannerConfig config;
  if (!MakePlan(observed, config).empty()) {
    state.SkipWithError("steady state was not reached");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(MakePlan(observed, config));
  }
  state.SetItemsProcessed(state.iterations() * replicas);
}
BENCHMARK(BM_ReplanRunningJob)->Arg(1)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
