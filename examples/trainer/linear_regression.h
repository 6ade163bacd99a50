// The example trainer's model: linear regression on a synthetic dataset that any process can
// regenerate sample by sample from the seed, so ranks need no data files to agree on their shards.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ringleader::examples {

inline constexpr std::size_t kFeatures = 8;
// The weights, then the bias.
inline constexpr std::size_t kParameters = kFeatures + 1;
using Parameters = std::array<double, kParameters>;

struct Sample {
  std::array<double, kFeatures> x{};
  double y = 0;
};

// Sample `index` of the dataset for `seed`: x uniform in [-1, 1), y = w.x + b plus a little noise,
// where the true w and b are drawn from the seed as well. Pure: the same on every machine.
Sample SampleAt(std::uint64_t seed, std::uint64_t index);

// The half-open range of sample indices that `rank` of `world_size` owns: contiguous, and the
// sizes differ by at most one.
struct Shard {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};
Shard ShardOf(std::uint64_t samples, int rank, int world_size);

std::vector<Sample> LoadShard(std::uint64_t seed, Shard shard);

// For the loss L = 1/(2n) * sum over all n samples of (w.x + b - y)^2: this shard's share of dL/dp
// and of L. Every term is divided by the global n, so the shards' shares sum to the full-batch
// gradient and loss whatever the split (data-parallel SGD equals single-process full-batch GD).
struct GradientShare {
  Parameters gradient{};
  double loss = 0;
};
GradientShare ComputeGradientShare(const std::vector<Sample>& shard, std::uint64_t total_samples,
                                   const Parameters& parameters);

// Sum of (i + 1) * p[i]: cheap, order-sensitive, and exact to compare between ranks.
double Checksum(const Parameters& parameters);

}  // namespace ringleader::examples
