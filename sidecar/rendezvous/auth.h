// Authentication of a rendezvous connection by the job token, a shared secret that every rank
// reads from its Secret volume and that never crosses the wire (protocol.h has the exchange).
// Two ways, both HMAC-SHA256 keyed by the token:
// - The early proof, in the Hello: HMAC(token, kEarlyProofLabel || rank || world_size ||
//   attempt || sent_at_ms || nonce), integers big-endian, nonce 32 client-chosen random bytes.
//   It costs no round trip, so a rank's requests can ride in the Hello's write. Freshness is the
//   server's: it welcomes a proof once (it remembers the nonces it welcomed for as long as their
//   sent_at_ms is within kEarlyProofWindow of its clock) and only inside that window, so a
//   recorded Hello cannot be replayed to it. A server that restarts forgets its nonces; a Hello
//   recorded less than kEarlyProofWindow before could then be replayed once. That needs an
//   on-path attacker, who could as well take over a live connection: like PyTorch's TCPStore,
//   the store does not encrypt, and the token keeps out those who cannot see the traffic.
// - The challenge, for a client whose clock is outside the window: the server sends
//   Challenge{nonce}, 32 bytes from its CSPRNG, fresh per connection, and the client answers
//   Proof{HMAC(token, kProofLabel || nonce || rank)}.
// Either proof is bound to the rank it claims; the server compares in constant time.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "sidecar/rendezvous/protocol.h"

namespace ringleader::rendezvous {

// Domain separation: a proof for this protocol is never valid for anything else keyed by the
// same token.
inline constexpr std::string_view kProofLabel = "ringleader-rendezvous-v1";

// A distinct label, so that an early proof is never valid as a challenge's proof.
inline constexpr std::string_view kEarlyProofLabel = "ringleader-rendezvous-v2-early";

// How far a Hello's sent_at_ms may be from the server's clock, either way, for its early proof
// to be welcomed. Cluster nodes keep their clocks within well under a second of each other; a
// node further off costs its ranks one more connection (the challenge), not a failure.
inline constexpr std::chrono::milliseconds kEarlyProofWindow{30'000};

// A fresh random nonce (OpenSSL RAND_bytes); nullopt if the CSPRNG fails, in which case the
// server must refuse the connection.
std::optional<Nonce> MakeNonce();

// The proof a client of the given rank sends for nonce.
ProofBytes ComputeProof(std::string_view token, const Nonce& nonce, std::uint32_t rank);

// The Hello's early_proof for its other fields (see above).
ProofBytes ComputeEarlyProof(std::string_view token, const Hello& hello);

// True when hello.early_proof is ComputeEarlyProof(token, hello), compared in constant time.
// Always false for an empty token. Says nothing of freshness, which is the server's to judge.
bool VerifyEarlyProof(std::string_view token, const Hello& hello);

// True when proof is ComputeProof(token, nonce, rank), compared in constant time. Always false
// for an empty token, so a server without a token accepts nobody.
bool VerifyProof(std::string_view token, const Nonce& nonce, std::uint32_t rank,
                 const ProofBytes& proof);

}  // namespace ringleader::rendezvous
