// The binary layout of events in thread buffers: a sequence of 64-bit words.
//
// Every record starts with a timestamp word and a tag word:
//
//   tag bits 63..60  kind
//   tag bit  59      a stream word follows the fixed part
//   tag bit  58      device words follow the stream word
//   tag bits 57..43  domain index
//   tag bits 42..0   payload: a registered string id, or a copied length
//
// then kind-specific words, the optional stream word, the optional device
// words (the sequence numbers of device events on that stream: two for a
// complete range, begin and end, else one), and for copied strings the bytes,
// padded to whole words. A scoped range with a registered string is
// one 3-word record written at its end; everything else is written when it
// happens.
#pragma once

#include "abi.hpp"

#include <cstddef>
#include <cstdint>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

enum class kind : std::uint8_t {
  complete = 1,      // ts(begin), tag(string id), ts(end)
  begin_ref = 2,     // ts, tag(string id), range id
  begin_copy = 3,    // ts, tag(length), range id, bytes
  end = 4,           // ts, tag, range id
  mark_ref = 5,      // ts, tag(string id)
  mark_copy = 6,     // ts, tag(length), bytes
  counter_ref = 7,   // ts, tag(string id), value, flags
  counter_copy = 8,  // ts, tag(length), value, flags, bytes
};

/// Where the fixed words of a record are, by name. Every record begins with
/// `ticks` and `tag`; the third and fourth word depend on the kind.
namespace word {
inline constexpr std::size_t ticks = 0;      // when it happened; a complete range's begin
inline constexpr std::size_t tag = 1;        // kind, stream and device bits, domain, payload
inline constexpr std::size_t end_ticks = 2;  // complete: the range's end
inline constexpr std::size_t range_id = 2;   // begin_ref, begin_copy, end
inline constexpr std::size_t value = 2;      // counters: the value's bits
inline constexpr std::size_t flags = 3;      // counters: counter_is_double
}  // namespace word

/// Counter flags word: whether the value word holds a double or an int64.
inline constexpr std::uint64_t counter_is_double = 1;

inline constexpr int kind_shift = 60;
inline constexpr std::uint64_t stream_bit = std::uint64_t{1} << 59;
inline constexpr std::uint64_t device_bit = std::uint64_t{1} << 58;
inline constexpr int domain_shift = 43;
inline constexpr std::uint64_t domain_mask = 0x7FFF;
inline constexpr std::uint64_t payload_mask = (std::uint64_t{1} << domain_shift) - 1;

/// Domain indices a tag can hold (index + 1 is a domain's state, below
/// forward_bit); index 0 is the default domain, and the last one collects
/// the domains past the limit (see domain_table).
inline constexpr std::uint32_t max_domains = static_cast<std::uint32_t>(domain_mask);

/// Longest copied message, as mstx allows under MSPTI; longer ones are
/// truncated and counted.
inline constexpr std::size_t max_message = 255;

/// Words of the fixed part of each kind, before the stream word and bytes.
constexpr std::size_t fixed_words(kind k) noexcept {
  switch (k) {
    case kind::mark_ref:
    case kind::mark_copy:
      return 2;
    case kind::complete:
    case kind::begin_ref:
    case kind::begin_copy:
    case kind::end:
      return 3;
    case kind::counter_ref:
    case kind::counter_copy:
      return 4;
  }
  return 2;
}

// The named words lie inside the fixed part of the kinds that have them.
static_assert(fixed_words(kind::mark_ref) == word::tag + 1 && fixed_words(kind::mark_copy) == word::tag + 1);
static_assert(fixed_words(kind::complete) == word::end_ticks + 1);
static_assert(fixed_words(kind::begin_ref) == word::range_id + 1 &&
              fixed_words(kind::begin_copy) == word::range_id + 1 && fixed_words(kind::end) == word::range_id + 1);
static_assert(fixed_words(kind::counter_ref) == word::flags + 1 && fixed_words(kind::counter_copy) == word::flags + 1 &&
              word::value < word::flags);

/// Device words of a record that has them.
constexpr std::size_t device_words(kind k) noexcept { return k == kind::complete ? 2 : 1; }

constexpr bool has_copied_bytes(kind k) noexcept {
  return k == kind::begin_copy || k == kind::mark_copy || k == kind::counter_copy;
}

constexpr std::uint64_t make_tag(kind k, std::uint32_t domain, std::uint64_t payload) noexcept {
  return (static_cast<std::uint64_t>(k) << kind_shift) |
         (static_cast<std::uint64_t>(domain & domain_mask) << domain_shift) | (payload & payload_mask);
}

constexpr kind tag_kind(std::uint64_t tag) noexcept { return static_cast<kind>(tag >> kind_shift); }
constexpr std::uint32_t tag_domain(std::uint64_t tag) noexcept {
  return static_cast<std::uint32_t>((tag >> domain_shift) & domain_mask);
}
constexpr std::uint64_t tag_payload(std::uint64_t tag) noexcept { return tag & payload_mask; }
constexpr bool tag_has_stream(std::uint64_t tag) noexcept { return (tag & stream_bit) != 0; }
constexpr bool tag_has_device(std::uint64_t tag) noexcept { return (tag & device_bit) != 0; }

/// Words between the fixed part and the copied bytes: stream and device words.
constexpr std::size_t stream_words(std::uint64_t tag) noexcept {
  if (!tag_has_stream(tag)) return 0;
  return 1 + (tag_has_device(tag) ? device_words(tag_kind(tag)) : 0);
}

/// The stream word of record `p`, whose tag has stream_bit.
inline std::uint64_t stream_word(const std::uint64_t* p) noexcept { return p[fixed_words(tag_kind(p[word::tag]))]; }

/// Device word `i` of record `p` (0: its begin or only event, 1: a complete
/// range's end), whose tag has device_bit.
inline std::uint64_t device_word(const std::uint64_t* p, std::size_t i) noexcept {
  return p[fixed_words(tag_kind(p[word::tag])) + 1 + i];
}

constexpr std::size_t words_for_bytes(std::size_t n) noexcept { return (n + 7) / 8; }

/// Longest record: the biggest fixed part, stream and device words and a full
/// message.
inline constexpr std::size_t max_record_words = 4 + 3 + words_for_bytes(max_message);

/// Words of the record at `p`, or 0 when [p, to) does not begin with a valid
/// record (an unknown kind, a length past the limit, a record cut short).
inline std::size_t record_words(const std::uint64_t* p, const std::uint64_t* to) noexcept {
  if (to - p < 2) return 0;
  const std::uint64_t tag = p[word::tag];
  // Most records: a scoped range with a registered string, on no stream.
  if ((tag & ~(domain_mask << domain_shift | payload_mask)) == make_tag(kind::complete, 0, 0)) {
    return to - p >= 3 ? 3 : 0;
  }
  const kind k = tag_kind(tag);
  if (k < kind::complete || k > kind::counter_copy) return 0;
  if (tag_has_device(tag) && !tag_has_stream(tag)) return 0;
  std::size_t n = fixed_words(k) + stream_words(tag);
  if (has_copied_bytes(k)) {
    const std::uint64_t len = tag_payload(tag);
    if (len > max_message) return 0;
    n += words_for_bytes(static_cast<std::size_t>(len));
  }
  return static_cast<std::size_t>(to - p) >= n ? n : 0;
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
