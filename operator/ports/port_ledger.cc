// The port ledger: a bitmap of free aligned blocks for allocation, and an ordered set of held
// bases so that misaligned blocks left by a range change still block the ports they cover.
#include "operator/ports/port_ledger.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <limits>
#include <system_error>

namespace ringleader::ports {
namespace {

constexpr std::int64_t kBlockSize = static_cast<std::int64_t>(contract::kPortsPerJob);
constexpr std::int64_t kMinPort = 1;
constexpr std::int64_t kMaxPort = 65535;
constexpr std::size_t kWordBits = 64;

enum class ParseOutcome { kOk, kNotANumber, kTooLarge };

// Digits only, so "+1", " 1" and "1x" read as malformed rather than as numbers.
ParseOutcome ParsePortNumber(std::string_view text, std::int64_t* value) {
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  if (text.empty() || !std::all_of(text.begin(), text.end(), is_digit)) {
    return ParseOutcome::kNotANumber;
  }
  std::uint64_t parsed = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (ec == std::errc::result_out_of_range || parsed > static_cast<std::uint64_t>(kMaxPort)) {
    return ParseOutcome::kTooLarge;
  }
  if (ec != std::errc() || end != text.data() + text.size()) {
    return ParseOutcome::kNotANumber;
  }
  *value = static_cast<std::int64_t>(parsed);
  return ParseOutcome::kOk;
}

std::optional<PortRange> Fail(std::string* error, const char* message) {
  if (error != nullptr) {
    *error = message;
  }
  return std::nullopt;
}

}  // namespace

std::int32_t PortRange::size() const {
  if (last < first) {
    return 0;
  }
  const std::int64_t size = std::int64_t{last} - first + 1;
  return static_cast<std::int32_t>(
      std::min<std::int64_t>(size, std::numeric_limits<std::int32_t>::max()));
}

bool PortRange::Contains(std::int32_t port) const { return first <= port && port <= last; }

std::string PortRange::ToString() const {
  return std::to_string(first) + "-" + std::to_string(last);
}

std::optional<PortRange> ParsePortRange(std::string_view text, std::string* error) {
  const std::size_t dash = text.find('-');
  if (dash == std::string_view::npos) {
    return Fail(error, "port range must look like FIRST-LAST");
  }
  std::int64_t first = 0;
  std::int64_t last = 0;
  const ParseOutcome first_outcome = ParsePortNumber(text.substr(0, dash), &first);
  const ParseOutcome last_outcome = ParsePortNumber(text.substr(dash + 1), &last);
  if (first_outcome == ParseOutcome::kNotANumber || last_outcome == ParseOutcome::kNotANumber) {
    return Fail(error, "port range must look like FIRST-LAST");
  }
  if (first_outcome == ParseOutcome::kTooLarge || last_outcome == ParseOutcome::kTooLarge ||
      first < kMinPort || last < kMinPort) {
    return Fail(error, "port range must lie within 1-65535");
  }
  if (last - first + 1 < kBlockSize) {
    return Fail(error, "port range must hold at least 4 ports");
  }
  return PortRange{static_cast<std::int32_t>(first), static_cast<std::int32_t>(last)};
}

std::int32_t PortBlock::Port(contract::PortRole role) const {
  return base + static_cast<std::int32_t>(role);
}

BlockIndexSet::BlockIndexSet(std::size_t capacity)
    : words_((capacity + kWordBits - 1) / kWordBits, ~std::uint64_t{0}),
      summary_((words_.size() + kWordBits - 1) / kWordBits, 0),
      size_(capacity) {
  if (capacity % kWordBits != 0) {
    words_.back() = (std::uint64_t{1} << (capacity % kWordBits)) - 1;
  }
  for (std::size_t word = 0; word < words_.size(); ++word) {
    summary_[word / kWordBits] |= std::uint64_t{1} << (word % kWordBits);
  }
}

void BlockIndexSet::Insert(std::size_t index) {
  const std::size_t word = index / kWordBits;
  const std::uint64_t bit = std::uint64_t{1} << (index % kWordBits);
  if ((words_[word] & bit) == 0) {
    words_[word] |= bit;
    summary_[word / kWordBits] |= std::uint64_t{1} << (word % kWordBits);
    ++size_;
  }
}

void BlockIndexSet::Erase(std::size_t index) {
  const std::size_t word = index / kWordBits;
  const std::uint64_t bit = std::uint64_t{1} << (index % kWordBits);
  if ((words_[word] & bit) != 0) {
    words_[word] &= ~bit;
    if (words_[word] == 0) {
      summary_[word / kWordBits] &= ~(std::uint64_t{1} << (word % kWordBits));
    }
    --size_;
  }
}

std::optional<std::size_t> BlockIndexSet::Lowest() const {
  for (std::size_t group = 0; group < summary_.size(); ++group) {
    if (summary_[group] != 0) {
      const std::size_t word =
          group * kWordBits + static_cast<std::size_t>(std::countr_zero(summary_[group]));
      return word * kWordBits + static_cast<std::size_t>(std::countr_zero(words_[word]));
    }
  }
  return std::nullopt;
}

PortLedger::PortLedger(PortRange range)
    : range_(range),
      capacity_(static_cast<std::size_t>(range.size()) / contract::kPortsPerJob),
      free_(capacity_) {}

std::optional<PortBlock> PortLedger::Find(const std::string& job) const {
  const auto it = holders_.find(job);
  if (it == holders_.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::optional<PortBlock> PortLedger::Peek() const {
  const std::optional<std::size_t> lowest = free_.Lowest();
  if (!lowest) {
    return std::nullopt;
  }
  return AlignedBlock(static_cast<std::int64_t>(*lowest));
}

std::optional<PortBlock> PortLedger::Allocate(const std::string& job) {
  const std::optional<PortBlock> block = Peek();
  if (!block) {
    return Find(job);
  }
  const auto [it, inserted] = holders_.try_emplace(job, *block);
  if (inserted) {
    MarkHeld(*block);
  }
  return it->second;
}

bool PortLedger::Reserve(const std::string& job, PortBlock block) {
  if (OverlapsHeldBlock(block.base)) {
    // Only the job's own block may overlap without a conflict, and only if it is this block.
    return Find(job) == block;
  }
  const auto [it, inserted] = holders_.try_emplace(job, block);
  if (inserted) {
    MarkHeld(block);
  }
  return inserted;  // not inserted: the job holds a different block elsewhere
}

void PortLedger::Release(const std::string& job) {
  const auto it = holders_.find(job);
  if (it == holders_.end()) {
    return;
  }
  const PortBlock block = it->second;
  held_bases_.erase(block.base);
  holders_.erase(it);
  // A misaligned neighbour may still cover part of an aligned block this one touched.
  const auto [low, high] = AlignedIndexesOverlapping(block);
  for (std::int64_t index = low; index <= high; ++index) {
    if (!OverlapsHeldBlock(AlignedBlock(index).base)) {
      free_.Insert(static_cast<std::size_t>(index));
    }
  }
}

PortLedger PortLedger::Rebuild(PortRange range,
                               const std::vector<std::pair<std::string, PortBlock>>& held,
                               std::vector<std::string>* conflicts) {
  PortLedger ledger(range);
  ledger.holders_.reserve(held.size());
  for (const auto& [job, block] : held) {
    if (!ledger.Reserve(job, block) && conflicts != nullptr) {
      conflicts->push_back(job);
    }
  }
  return ledger;
}

bool PortLedger::operator==(const PortLedger& other) const {
  return range_ == other.range_ && holders_ == other.holders_ && free_ == other.free_;
}

std::pair<std::int64_t, std::int64_t> PortLedger::AlignedIndexesOverlapping(
    PortBlock block) const {
  const std::int64_t aligned_last =
      std::int64_t{range_.first} + static_cast<std::int64_t>(capacity_) * kBlockSize - 1;
  const std::int64_t low = std::max<std::int64_t>(block.base, range_.first);
  const std::int64_t high =
      std::min<std::int64_t>(std::int64_t{block.base} + kBlockSize - 1, aligned_last);
  if (low > high) {
    return {1, 0};
  }
  return {(low - range_.first) / kBlockSize, (high - range_.first) / kBlockSize};
}

bool PortLedger::OverlapsHeldBlock(std::int64_t low) const {
  // Held blocks never overlap each other, so the first base at or after low-3 decides.
  const auto it = held_bases_.lower_bound(low - (kBlockSize - 1));
  return it != held_bases_.end() && *it <= low + (kBlockSize - 1);
}

PortBlock PortLedger::AlignedBlock(std::int64_t index) const {
  return PortBlock{static_cast<std::int32_t>(range_.first + index * kBlockSize)};
}

void PortLedger::MarkHeld(PortBlock block) {
  held_bases_.insert(block.base);
  const auto [low, high] = AlignedIndexesOverlapping(block);
  for (std::int64_t index = low; index <= high; ++index) {
    free_.Erase(static_cast<std::size_t>(index));
  }
}

}  // namespace ringleader::ports
