// Record writers: one function per record shape, each a reserve, a few stores
// and a commit. Every function returns false when the event was dropped.
#pragma once

#include <cstdint>
#include <cstring>

#include "../buffer.hpp"
#include "../clock.hpp"
#include "../stream.hpp"
#include "message.hpp"
#include "record.hpp"

namespace npuprof::detail {

/// A record of three words (optionally plus a stream word): complete ranges,
/// registered begins and ends.
NPUPROF_ALWAYS_INLINE bool write3(std::uint64_t w0, std::uint64_t tag, std::uint64_t w2,
                                  stream_t stream) noexcept {
  const std::size_t n = stream != nullptr ? 4 : 3;
  std::uint64_t* p = reserve(n);
  if (NPUPROF_UNLIKELY(p == nullptr)) return false;
  p[0] = w0;
  p[2] = w2;
  if (stream != nullptr) {
    tag |= stream_bit;
    p[3] = reinterpret_cast<std::uintptr_t>(stream);
  }
  p[1] = tag;
  commit(p + n);
  return true;
}

/// A two-word mark with a registered string.
NPUPROF_ALWAYS_INLINE bool write2(std::uint64_t ts, std::uint64_t tag, stream_t stream) noexcept {
  const std::size_t n = stream != nullptr ? 3 : 2;
  std::uint64_t* p = reserve(n);
  if (NPUPROF_UNLIKELY(p == nullptr)) return false;
  p[0] = ts;
  if (stream != nullptr) {
    tag |= stream_bit;
    p[2] = reinterpret_cast<std::uintptr_t>(stream);
  }
  p[1] = tag;
  commit(p + n);
  return true;
}

/// Any record: `fixed` words from `head` (head[0] is the timestamp slot,
/// head[1] the tag), then the stream word, then `len` copied bytes.
inline bool write_general(std::uint64_t* head, std::size_t fixed, stream_t stream, const char* bytes,
                          std::size_t len) noexcept {
  const std::size_t extra = stream != nullptr ? 1 : 0;
  const std::size_t n = fixed + extra + words_for_bytes(len);
  std::uint64_t* p = reserve(n);
  if (NPUPROF_UNLIKELY(p == nullptr)) return false;
  if (stream != nullptr) head[1] |= stream_bit;
  std::memcpy(p, head, fixed * sizeof(std::uint64_t));
  if (stream != nullptr) p[fixed] = reinterpret_cast<std::uintptr_t>(stream);
  if (len != 0) {
    p[n - 1] = 0;  // padding bytes stay deterministic
    std::memcpy(p + fixed + extra, bytes, len);
  }
  commit(p + n);
  return true;
}

/// A mark of domain `index`: registered or copied.
inline bool write_mark(std::uint32_t index, const message& m, stream_t stream) noexcept {
  if (m.is_registered()) return write2(raw_ticks(), make_tag(kind::mark_ref, index, m.id()), stream);
  const std::size_t len = m.copy_length();
  std::uint64_t head[2] = {raw_ticks(), make_tag(kind::mark_copy, index, len)};
  return write_general(head, 2, stream, m.text(), len);
}

/// The begin of an id-matched range.
inline bool write_begin(std::uint32_t index, const message& m, std::uint64_t id, stream_t stream) noexcept {
  if (m.is_registered()) return write3(raw_ticks(), make_tag(kind::begin_ref, index, m.id()), id, stream);
  const std::size_t len = m.copy_length();
  std::uint64_t head[3] = {0, make_tag(kind::begin_copy, index, len), id};
  head[0] = raw_ticks();
  return write_general(head, 3, stream, m.text(), len);
}

/// The end of an id-matched range; the begin carries the domain.
inline bool write_end(std::uint64_t id, stream_t stream) noexcept {
  return write3(raw_ticks(), make_tag(kind::end, 0, 0), id, stream);
}

/// One sample of a counter.
inline bool write_counter(std::uint32_t index, const message& name, std::uint64_t value_bits,
                          std::uint64_t flags) noexcept {
  if (name.is_registered()) {
    std::uint64_t head[4] = {raw_ticks(), make_tag(kind::counter_ref, index, name.id()), value_bits, flags};
    return write_general(head, 4, nullptr, nullptr, 0);
  }
  const std::size_t len = name.copy_length();
  std::uint64_t head[4] = {raw_ticks(), make_tag(kind::counter_copy, index, len), value_bits, flags};
  return write_general(head, 4, nullptr, name.text(), len);
}

}  // namespace npuprof::detail
