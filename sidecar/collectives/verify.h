// Seeded, verifiable data in the spirit of nccl-tests' verifiable/: inputs are small integers
// (from seed, rank and index) so every float sum is exact and outputs compare with ==.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sidecar/collectives/communicator.h"

namespace ringleader::collectives {

// An integer in [-8, 8] as a float; sums of up to 2^20 of them are exact.
float InputValue(std::uint64_t seed, int rank, std::size_t index);

// The send buffer rank `rank` fills for one call with `count` elements per rank: element i is
// InputValue(seed, rank, i), over ElemsFor(...).send elements.
std::vector<float> MakeInput(Collective collective, std::size_t count, int rank, int n,
                             std::uint64_t seed);
// Send elements offset .. offset + out.size() - 1 of that buffer, so it can be written in pieces.
void FillInput(std::uint64_t seed, int rank, std::size_t offset, std::span<float> out);

// What rank `rank` must receive (ElemsFor(...).recv elements) when every rank sent MakeInput.
// `peers` matter for sendrecv only.
std::vector<float> ExpectedOutput(Collective collective, std::size_t count, int rank, int n,
                                  std::uint64_t seed, Peers peers = {});
// Receive elements offset .. offset + out.size() - 1 of ExpectedOutput, so a large output can
// be checked in pieces. Throws std::invalid_argument when the range passes the receive buffer.
void FillExpected(Collective collective, std::size_t count, int rank, int n, std::uint64_t seed,
                  Peers peers, std::size_t offset, std::span<float> out);

// Elements of `got` that differ from `expected` (a NaN never matches); sizes must agree.
std::uint64_t CountWrong(std::span<const float> got, std::span<const float> expected);

}  // namespace ringleader::collectives
