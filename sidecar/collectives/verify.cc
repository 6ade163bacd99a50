// Verifiable inputs and the outputs each collective must produce from them.
#include "sidecar/collectives/verify.h"

#include <stdexcept>
#include <string>

namespace ringleader::collectives {
namespace {

// splitmix64's finaliser: a cheap, well-mixed hash of the element's coordinates.
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

float InputValue(std::uint64_t seed, int rank, std::size_t index) {
  const std::uint64_t h = Mix(Mix(seed ^ Mix(static_cast<std::uint64_t>(rank))) ^ index);
  return static_cast<float>(static_cast<int>(h % 17) - 8);
}

std::vector<float> MakeInput(Collective collective, std::size_t count, int rank, int n,
                             std::uint64_t seed) {
  std::vector<float> input(ElemsFor(collective, count, n).send);
  for (std::size_t i = 0; i < input.size(); ++i) {
    input[i] = InputValue(seed, rank, i);
  }
  return input;
}

std::vector<float> ExpectedOutput(Collective collective, std::size_t count, int rank, int n,
                                  std::uint64_t seed, Peers peers) {
  std::vector<float> out(ElemsFor(collective, count, n).recv);
  const auto sum_over_ranks = [&](std::size_t index) {
    float sum = 0;
    for (int k = 0; k < n; ++k) {
      sum += InputValue(seed, k, index);
    }
    return sum;
  };
  const std::size_t own_chunk = static_cast<std::size_t>(rank) * count;
  switch (collective) {
    case Collective::kAllReduce:
      for (std::size_t i = 0; i < count; ++i) {
        out[i] = sum_over_ranks(i);
      }
      break;
    case Collective::kReduceScatter:
      for (std::size_t i = 0; i < count; ++i) {
        out[i] = sum_over_ranks(own_chunk + i);
      }
      break;
    case Collective::kAllGather:
      for (int k = 0; k < n; ++k) {
        for (std::size_t i = 0; i < count; ++i) {
          out[static_cast<std::size_t>(k) * count + i] = InputValue(seed, k, i);
        }
      }
      break;
    case Collective::kAllToAll:
      // Rank k's chunk `rank` lands in chunk k here.
      for (int k = 0; k < n; ++k) {
        for (std::size_t i = 0; i < count; ++i) {
          out[static_cast<std::size_t>(k) * count + i] = InputValue(seed, k, own_chunk + i);
        }
      }
      break;
    case Collective::kBroadcast:
      for (std::size_t i = 0; i < count; ++i) {
        out[i] = InputValue(seed, kBroadcastRoot, i);
      }
      break;
    case Collective::kSendRecv:
      if (peers.recv_from < 0 || peers.recv_from >= n) {
        throw std::invalid_argument("sendrecv: expected output needs the peer it receives from");
      }
      for (std::size_t i = 0; i < count; ++i) {
        out[i] = InputValue(seed, peers.recv_from, i);
      }
      break;
  }
  return out;
}

std::uint64_t CountWrong(std::span<const float> got, std::span<const float> expected) {
  if (got.size() != expected.size()) {
    throw std::invalid_argument("CountWrong: " + std::to_string(got.size()) + " results for " +
                                std::to_string(expected.size()) + " expected values");
  }
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    // NaN != NaN, so a poisoned element that was never written counts as wrong.
    if (!(got[i] == expected[i])) {
      ++wrong;
    }
  }
  return wrong;
}

}  // namespace ringleader::collectives
