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
  FillInput(seed, rank, 0, input);
  return input;
}

void FillInput(std::uint64_t seed, int rank, std::size_t offset, std::span<float> out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = InputValue(seed, rank, offset + i);
  }
}

std::vector<float> ExpectedOutput(Collective collective, std::size_t count, int rank, int n,
                                  std::uint64_t seed, Peers peers) {
  std::vector<float> out(ElemsFor(collective, count, n).recv);
  FillExpected(collective, count, rank, n, seed, peers, 0, out);
  return out;
}

void FillExpected(Collective collective, std::size_t count, int rank, int n, std::uint64_t seed,
                  Peers peers, std::size_t offset, std::span<float> out) {
  const std::size_t recv = ElemsFor(collective, count, n).recv;
  if (offset > recv || out.size() > recv - offset) {
    throw std::invalid_argument("FillExpected: elements " + std::to_string(offset) + "+" +
                                std::to_string(out.size()) + " pass the receive buffer of " +
                                std::to_string(recv));
  }
  const auto sum_over_ranks = [&](std::size_t index) {
    float sum = 0;
    for (int k = 0; k < n; ++k) {
      sum += InputValue(seed, k, index);
    }
    return sum;
  };
  const std::size_t own_chunk = static_cast<std::size_t>(rank) * count;
  // Element i of the output is element `offset + i` of the whole receive buffer.
  switch (collective) {
    case Collective::kAllReduce:
      for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = sum_over_ranks(offset + i);
      }
      break;
    case Collective::kReduceScatter:
      for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = sum_over_ranks(own_chunk + offset + i);
      }
      break;
    case Collective::kAllGather:
      // Chunk k holds rank k's input.
      for (std::size_t i = 0; i < out.size(); ++i) {
        const std::size_t at = offset + i;
        out[i] = InputValue(seed, static_cast<int>(at / count), at % count);
      }
      break;
    case Collective::kAllToAll:
      // Rank k's chunk `rank` lands in chunk k here.
      for (std::size_t i = 0; i < out.size(); ++i) {
        const std::size_t at = offset + i;
        out[i] = InputValue(seed, static_cast<int>(at / count), own_chunk + at % count);
      }
      break;
    case Collective::kBroadcast:
      FillInput(seed, kBroadcastRoot, offset, out);
      break;
    case Collective::kSendRecv:
      if (peers.recv_from < 0 || peers.recv_from >= n) {
        throw std::invalid_argument("sendrecv: expected output needs the peer it receives from");
      }
      FillInput(seed, peers.recv_from, offset, out);
      break;
  }
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
