// Authentication of a rendezvous connection by the job token, a shared secret that every rank
// reads from its Secret volume and that never crosses the wire (protocol.h has the exchange):
//   server -> client  Challenge{nonce}     32 bytes from the CSPRNG, fresh per connection
//   client -> server  Proof{hmac}          HMAC-SHA256(token, kProofLabel || nonce || rank)
// where rank is the Hello's rank as 4 bytes big-endian, so a proof is bound to this connection's
// nonce and to the rank it claims. The server compares in constant time.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "sidecar/rendezvous/protocol.h"

namespace ringleader::rendezvous {

// Domain separation: a proof for this protocol is never valid for anything else keyed by the
// same token.
inline constexpr std::string_view kProofLabel = "ringleader-rendezvous-v1";

// A fresh random nonce (OpenSSL RAND_bytes); nullopt if the CSPRNG fails, in which case the
// server must refuse the connection.
std::optional<Nonce> MakeNonce();

// The proof a client of the given rank sends for nonce.
ProofBytes ComputeProof(std::string_view token, const Nonce& nonce, std::uint32_t rank);

// True when proof is ComputeProof(token, nonce, rank), compared in constant time. Always false
// for an empty token, so a server without a token accepts nobody.
bool VerifyProof(std::string_view token, const Nonce& nonce, std::uint32_t rank,
                 const ProofBytes& proof);

}  // namespace ringleader::rendezvous
