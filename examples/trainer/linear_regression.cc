#include "examples/trainer/linear_regression.h"

namespace ringleader::examples {
namespace {

// splitmix64's finaliser: a cheap, well-mixed hash, so sample i needs no generator state.
std::uint64_t Mix(std::uint64_t value) {
  value += 0x9E3779B97F4A7C15ULL;
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9ULL;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EBULL;
  return value ^ (value >> 31);
}

// Uniform in [-1, 1) from (seed, stream, index).
double Uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const std::uint64_t bits = Mix(Mix(Mix(seed) ^ stream) ^ index);
  return static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0;
}

constexpr std::uint64_t kTruthStream = 1;
constexpr std::uint64_t kFeatureStreamBase = 100;
constexpr std::uint64_t kNoiseStream = 2;
constexpr double kNoise = 0.01;

}  // namespace

Sample SampleAt(std::uint64_t seed, std::uint64_t index) {
  Sample sample;
  sample.y = Uniform(seed, kTruthStream, kFeatures);  // the true bias
  for (std::size_t j = 0; j < kFeatures; ++j) {
    sample.x[j] = Uniform(seed, kFeatureStreamBase + j, index);
    sample.y += 2.0 * Uniform(seed, kTruthStream, j) * sample.x[j];
  }
  sample.y += kNoise * Uniform(seed, kNoiseStream, index);
  return sample;
}

Shard ShardOf(std::uint64_t samples, int rank, int world_size) {
  const auto ranks = static_cast<std::uint64_t>(world_size);
  const auto r = static_cast<std::uint64_t>(rank);
  const std::uint64_t base = samples / ranks;
  const std::uint64_t extra = samples % ranks;
  const std::uint64_t begin = r * base + (r < extra ? r : extra);
  return Shard{begin, begin + base + (r < extra ? 1 : 0)};
}

std::vector<Sample> LoadShard(std::uint64_t seed, Shard shard) {
  std::vector<Sample> samples;
  samples.reserve(shard.end - shard.begin);
  for (std::uint64_t i = shard.begin; i < shard.end; ++i) {
    samples.push_back(SampleAt(seed, i));
  }
  return samples;
}

GradientShare ComputeGradientShare(const std::vector<Sample>& shard, std::uint64_t total_samples,
                                   const Parameters& parameters) {
  GradientShare share;
  const double n = static_cast<double>(total_samples);
  for (const Sample& sample : shard) {
    double error = parameters[kFeatures] - sample.y;
    for (std::size_t j = 0; j < kFeatures; ++j) {
      error += parameters[j] * sample.x[j];
    }
    for (std::size_t j = 0; j < kFeatures; ++j) {
      share.gradient[j] += error * sample.x[j] / n;
    }
    share.gradient[kFeatures] += error / n;
    share.loss += error * error / (2.0 * n);
  }
  return share;
}

double Checksum(const Parameters& parameters) {
  double sum = 0;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    sum += static_cast<double>(i + 1) * parameters[i];
  }
  return sum;
}

}  // namespace ringleader::examples
