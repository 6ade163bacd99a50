// The port ledger: which block of kPortsPerJob consecutive ports each live TrainingJob holds, so
// that any jobs may share a node (even with hostNetwork). Pure bookkeeping, rebuilt from status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sidecar/contract/contract.h"

namespace ringleader::ports {

// An inclusive range of ports the operator may hand out. The default lies above Linux's default
// ephemeral range (32768-60999), so the kernel never picks these ports for outgoing connections.
struct PortRange {
  std::int32_t first = 61000;
  std::int32_t last = 65535;  // inclusive

  std::int32_t size() const;  // 0 when last < first
  bool Contains(std::int32_t port) const;
  std::string ToString() const;  // "61000-65535"
  bool operator==(const PortRange&) const = default;
};

// Parses "61000-65535". On failure returns nullopt and sets *error (when error is not null) to
// "port range must look like FIRST-LAST", "... must lie within 1-65535" or
// "... must hold at least 4 ports".
std::optional<PortRange> ParsePortRange(std::string_view text, std::string* error);

// Ports base..base+kPortsPerJob-1, in contract::PortRole order.
struct PortBlock {
  std::int32_t base = 0;

  std::int32_t Port(contract::PortRole role) const;
  bool operator==(const PortBlock&) const = default;
};

// A set of block indexes in [0, capacity), kept as a two-level bitmap so that the lowest member is
// found in a few word scans and nothing allocates after construction. Internal to PortLedger.
class BlockIndexSet {
 public:
  explicit BlockIndexSet(std::size_t capacity);  // starts full: every index present

  void Insert(std::size_t index);
  void Erase(std::size_t index);
  std::optional<std::size_t> Lowest() const;
  std::size_t size() const { return size_; }
  bool operator==(const BlockIndexSet&) const = default;

 private:
  std::vector<std::uint64_t> words_;    // bit i % 64 of word i / 64: index i is present
  std::vector<std::uint64_t> summary_;  // bit w % 64 of word w / 64: words_[w] is not zero
  std::size_t size_ = 0;
};

// Hands out aligned blocks (range.first + 4*i, wholly inside the range) lowest first, and
// remembers blocks read back from status even if they no longer fit the range.
// Invariant: no port is held by two jobs. Not thread-safe; the reconciler owns it.
class PortLedger {
 public:
  // `range` should come from ParsePortRange (1 <= first <= last <= 65535).
  explicit PortLedger(PortRange range);

  const PortRange& range() const { return range_; }

  // The block `job` (the job's uid) holds, if any.
  std::optional<PortBlock> Find(const std::string& job) const;

  // The block Allocate() would give a new job right now, without changing anything: the pure
  // planner proposes it and records it with Reserve() once status is written.
  std::optional<PortBlock> Peek() const;

  // Gives `job` the lowest free aligned block, or the block it already holds (idempotent).
  // nullopt when every aligned block is taken. O(log n).
  std::optional<PortBlock> Allocate(const std::string& job);

  // Records a block read from a job's status or proposed by Peek(). Returns false and changes
  // nothing if any of its ports is held by another job, or if `job` already holds a different
  // block; true if recorded or already held by `job`. A block outside the range or misaligned
  // (the range changed since) is still held and blocks every aligned block it overlaps.
  bool Reserve(const std::string& job, PortBlock block);

  // Frees the block `job` holds; a no-op for unknown jobs.
  void Release(const std::string& job);

  std::size_t capacity() const { return capacity_; }  // aligned blocks in the range
  std::size_t free_blocks() const { return free_.size(); }
  std::size_t jobs() const { return holders_.size(); }  // jobs holding a block

  // Rebuilds the ledger from (job uid, block) pairs read from status, in order. A pair that
  // conflicts with an earlier one is not recorded and its job uid is appended to *conflicts
  // (when conflicts is not null).
  static PortLedger Rebuild(PortRange range,
                            const std::vector<std::pair<std::string, PortBlock>>& held,
                            std::vector<std::string>* conflicts);

  // Same range, same holders with the same blocks, same free set.
  bool operator==(const PortLedger& other) const;

 private:
  // Aligned block indexes [first, last] that the ports of `block` touch; empty when first > last.
  std::pair<std::int64_t, std::int64_t> AlignedIndexesOverlapping(PortBlock block) const;
  // Whether any held block shares a port with ports [low, low + kPortsPerJob).
  bool OverlapsHeldBlock(std::int64_t low) const;
  PortBlock AlignedBlock(std::int64_t index) const;
  // Takes the ports of a block just added to holders_ out of the free set.
  void MarkHeld(PortBlock block);

  PortRange range_;
  std::size_t capacity_ = 0;
  BlockIndexSet free_;                                  // aligned blocks no held block touches
  std::unordered_map<std::string, PortBlock> holders_;  // job uid -> block
  std::set<std::int64_t> held_bases_;                   // bases of holders_, for overlap checks
};

}  // namespace ringleader::ports
