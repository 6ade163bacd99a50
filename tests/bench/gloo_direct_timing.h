// gloo::allreduce called directly and timed as the sidecar's probe times a collective: warm-up,
// a barrier, the wall clock around the timed calls, the slowest rank's mean. The baseline both
// gloo_allreduce_direct (one process per rank) and probe_overhead_bench (ranks as threads) use.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/context.h>
#include <gloo/math.h>

namespace ringleader::bench {

// Sums `count` floats of `in` over every rank into `out`.
inline void GlooAllReduceSum(const std::shared_ptr<gloo::Context>& context, float* in,
                             float* out, std::size_t count) {
  gloo::AllreduceOptions opts(context);
  opts.setInput(in, count);
  opts.setOutput(out, count);
  opts.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&gloo::sum<float>));
  gloo::allreduce(opts);
}

// The largest of every rank's `value`, on every rank.
inline double GlooMaxOverRanks(const std::shared_ptr<gloo::Context>& context, double value) {
  gloo::AllreduceOptions opts(context);
  opts.setOutput(&value, 1);
  opts.setReduceFunction(
      static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&gloo::max<double>));
  gloo::allreduce(opts);
  return value;
}

// Seconds per call of all_reduce over `count` elements: `warmup` calls, gloo::barrier, then the
// mean of `iters` timed calls on the slowest rank. `out` holds the last call's result.
inline double TimeGlooAllReduce(const std::shared_ptr<gloo::Context>& context, float* in,
                                float* out, std::size_t count, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) {
    GlooAllReduceSum(context, in, out, count);
  }
  gloo::BarrierOptions barrier(context);
  gloo::barrier(barrier);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    GlooAllReduceSum(context, in, out, count);
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return GlooMaxOverRanks(context, elapsed.count() / iters);
}

}  // namespace ringleader::bench
