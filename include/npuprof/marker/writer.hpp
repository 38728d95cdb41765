// Record writers: one function per record shape, each a reserve, a few stores
// and a commit. Every function returns false when the event was dropped.
//
// With range.hpp, this file holds the whole record path of a scoped range:
// range.hpp's scoped_core asks begin_scoped() here at its begin, and
// end_scoped() writes its one record at its end through write3(), reserve()
// and commit(), all below. Only a thread's first event and a full chunk
// leave this file (reserve_slow, in buffer.hpp).
//
// Host-only records take the inline paths. A record tied to a stream goes
// through write_general: it also asks the device backend (if one runs) for a
// device event on the stream and stores its sequence number.
#pragma once

#include "abi.hpp"

#include <cstdint>
#include <cstring>

#include "buffer.hpp"
#include "../clock.hpp"
#include "../stream.hpp"
#include "device_hook.hpp"
#include "message.hpp"
#include "prefetch.hpp"
#include "marker_state.hpp"
#include "record.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

// The buffer store: a thread-local load, a bounds check, plain stores and one
// release store that publishes the record to the drainer.

/// The calling thread's buffer, registering the thread on its first event;
/// null when it cannot be registered (or no control table is installed, so
/// no session can be running).
NPUPROF_ALWAYS_INLINE thread_buffer* this_thread_buffer() noexcept {
  thread_buffer* tb = t_buffer;
  if (NPUPROF_LIKELY(tb != nullptr)) return tb;
  return register_this_thread();
}

/// Room for `words` words in this thread's buffer, or null when the event has
/// to be dropped (it is then already counted).
NPUPROF_ALWAYS_INLINE std::uint64_t* reserve(std::size_t words) noexcept {
  thread_buffer* tb = t_buffer;
  if (NPUPROF_LIKELY(tb != nullptr)) {
    std::uint64_t* p = tb->write;
    if (NPUPROF_LIKELY(static_cast<std::size_t>(tb->limit - p) >= words)) return p;
  }
  return reserve_slow(words);
}

/// Room for a range end: as reserve(), and when no chunk is free, the room
/// kept for ends at the end of the current chunk.
NPUPROF_ALWAYS_INLINE std::uint64_t* reserve_end(std::size_t words) noexcept {
  thread_buffer* tb = t_buffer;
  if (NPUPROF_LIKELY(tb != nullptr)) {
    std::uint64_t* p = tb->write;
    if (NPUPROF_LIKELY(static_cast<std::size_t>(tb->limit - p) >= words)) return p;
  }
  return reserve_slow(words, true);
}

/// Publishes everything written before `end` to the drainer.
NPUPROF_ALWAYS_INLINE void commit(std::uint64_t* end) noexcept {
  thread_buffer* tb = t_buffer;
  tb->write = end;
  tb->current.load(std::memory_order_relaxed)->published.store(end, std::memory_order_release);
}

/// A new range id: unique in the process, never 0, no shared counter.
inline std::uint64_t next_range_id() noexcept {
  thread_buffer* tb = this_thread_buffer();
  if (tb == nullptr) return 0;
  return tb->id_base | (++tb->id_seq & ((std::uint64_t{1} << 40) - 1));
}

/// A thread that cannot get a buffer records nothing; its event is counted.
NPUPROF_COLD inline void count_unregistered() noexcept {
  marker_state& s = markers();
  s.stats.bump(s.stats.unregistered_drops);
}

/// Counts the end of a scoped range, on the thread that began it, once its
/// record is published: a reader that sees the range closed (acquire) then
/// finds its record (see drained_records::take_published). One ended on
/// another thread (moved there behind a pointer, against its contract) must
/// not crash there, nor wrap that thread's count: it stays counted as open
/// where it began.
NPUPROF_ALWAYS_INLINE void scoped_ended(thread_buffer* tb) noexcept {
  if (NPUPROF_UNLIKELY(tb == nullptr)) return;
  const std::uint32_t n = tb->open_scoped.load(std::memory_order_relaxed);
  if (NPUPROF_LIKELY(n != 0)) tb->open_scoped.store(n - 1, std::memory_order_release);
}

/// Device events of one record: none (no device backend), or one per
/// device word of its kind.
struct device_seqs {
  std::uint64_t seq[2] = {no_device_event, no_device_event};
  std::size_t count = 0;
};

/// Records a device event on `stream` when a device backend runs.
inline device_seqs record_device_event(stream_t stream) noexcept {
  device_seqs d;
  if (device_recorder* r = markers().device.load(std::memory_order_acquire)) {
    d.seq[0] = r->record(stream);
    d.count = 1;
  }
  return d;
}

/// A three-word host-only record: complete ranges (third word: end_ticks),
/// registered begins and ends (range_id); `is_end`: from the room chunks
/// keep for ends, see reserve_end.
NPUPROF_ALWAYS_INLINE bool write3(std::uint64_t ticks, std::uint64_t tag, std::uint64_t third,
                                  bool is_end = false) noexcept {
  static_assert(word::end_ticks == 2 && word::range_id == 2, "the third word of a three-word record");
  std::uint64_t* p = is_end ? reserve_end(3) : reserve(3);
  if (NPUPROF_UNLIKELY(p == nullptr)) return false;
  p[word::ticks] = ticks;
  p[word::tag] = tag;
  p[2] = third;
  commit(p + 3);
  return true;
}

/// A two-word host-only mark with a registered string.
NPUPROF_ALWAYS_INLINE bool write2(std::uint64_t ts, std::uint64_t tag) noexcept {
  std::uint64_t* p = reserve(2);
  if (NPUPROF_UNLIKELY(p == nullptr)) return false;
  p[word::ticks] = ts;
  p[word::tag] = tag;
  commit(p + 2);
  return true;
}

/// Any record: `fixed` words from `head`, laid out as `word` names them,
/// then the stream word and device words, then `len` copied bytes.
inline bool write_general(std::uint64_t* head, std::size_t fixed, stream_t stream, const device_seqs& dev,
                          const char* bytes, std::size_t len, bool is_end = false) noexcept {
  std::size_t extra = 0;
  if (stream != nullptr) {
    head[word::tag] |= stream_bit;
    extra = 1;
    if (dev.count != 0) {
      head[word::tag] |= device_bit;
      extra += device_words(tag_kind(head[word::tag]));
    }
  }
  const std::size_t n = fixed + extra + words_for_bytes(len);
  std::uint64_t* p = is_end ? reserve_end(n) : reserve(n);
  if (NPUPROF_UNLIKELY(p == nullptr)) return false;
  std::memcpy(p, head, fixed * sizeof(std::uint64_t));
  if (extra != 0) {
    p[fixed] = reinterpret_cast<std::uintptr_t>(stream);
    for (std::size_t i = 1; i < extra; ++i) p[fixed + i] = dev.seq[i - 1];
  }
  if (len != 0) {
    p[n - 1] = 0;  // padding bytes stay deterministic
    std::memcpy(p + fixed + extra, bytes, len);
  }
  commit(p + n);
  return true;
}

/// A mark of domain `index`: registered or copied. On a stream, the device
/// event follows the host timestamp.
inline bool write_mark(std::uint32_t index, const message& m, stream_t stream) noexcept {
  const std::uint64_t ts = raw_ticks();
  if (stream == nullptr && m.is_registered()) return write2(ts, make_tag(kind::mark_ref, index, m.id()));
  const device_seqs dev = stream != nullptr ? record_device_event(stream) : device_seqs{};
  if (m.is_registered()) {
    std::uint64_t head[2] = {ts, make_tag(kind::mark_ref, index, m.id())};
    return write_general(head, 2, stream, dev, nullptr, 0);
  }
  const std::size_t len = m.copy_length();
  std::uint64_t head[2] = {ts, make_tag(kind::mark_copy, index, len)};
  return write_general(head, 2, stream, dev, m.text(), len);
}

/// The begin of an id-matched range.
inline bool write_begin(std::uint32_t index, const message& m, std::uint64_t id, stream_t stream) noexcept {
  const std::uint64_t ts = raw_ticks();
  if (stream == nullptr && m.is_registered()) return write3(ts, make_tag(kind::begin_ref, index, m.id()), id);
  const device_seqs dev = stream != nullptr ? record_device_event(stream) : device_seqs{};
  if (m.is_registered()) {
    std::uint64_t head[3] = {ts, make_tag(kind::begin_ref, index, m.id()), id};
    return write_general(head, 3, stream, dev, nullptr, 0);
  }
  const std::size_t len = m.copy_length();
  std::uint64_t head[3] = {ts, make_tag(kind::begin_copy, index, len), id};
  return write_general(head, 3, stream, dev, m.text(), len);
}

/// The end of an id-matched range. The begin's domain is the range's; the
/// end's (`domain`) is drawn only when the begin is gone (a flight recorder
/// let it go). On a stream, the device event comes before the host
/// timestamp, so that the host range encloses the device one's recording.
/// Ends use the room chunks keep for them (reserve_end), so that a range
/// whose begin was recorded does not lose its end to a full buffer.
inline bool write_end(std::uint32_t domain, std::uint64_t id, stream_t stream) noexcept {
  const std::uint64_t tag = make_tag(kind::end, domain, 0);
  if (stream == nullptr) return write3(raw_ticks(), tag, id, true);
  const device_seqs dev = record_device_event(stream);
  std::uint64_t head[3] = {raw_ticks(), tag, id};
  return write_general(head, 3, stream, dev, nullptr, 0, true);
}

/// What begin_device_event gives when no device backend runs.
inline constexpr std::uint64_t no_device_backend = ~std::uint64_t{1};

/// The begin half of a complete record on a stream, in one word: the device
/// event's sequence number, no_device_event, or no_device_backend.
inline std::uint64_t begin_device_event(stream_t stream) noexcept {
  const device_seqs d = record_device_event(stream);
  return d.count != 0 ? d.seq[0] : no_device_backend;
}

/// The one record of a scoped range with a registered string that was tied
/// to a stream: `begin_device` is what begin_device_event gave at its begin.
inline bool write_complete_on_stream(std::uint64_t first, std::uint64_t tag, stream_t stream,
                                     std::uint64_t begin_device) noexcept {
  device_seqs dev;
  dev.seq[0] = begin_device == no_device_backend ? no_device_event : begin_device;
  marker_state& st = markers();
  if (device_recorder* r = st.device.load(std::memory_order_acquire)) {
    dev.seq[1] = r->record(stream);
    dev.count = 2;
  } else if (begin_device != no_device_backend) {
    dev.count = 2;  // the backend went away: keep the begin, the end is missing
  }
  const std::uint64_t end = raw_ticks();
  if (NPUPROF_UNLIKELY(dev.count == 0)) {
    std::uint64_t head[3] = {first, tag, end};
    return write_general(head, 3, stream, dev, nullptr, 0);
  }
  // The common case written directly, laid out as write_general would: the
  // always-on device range pays for no length arithmetic or copy loops.
  static_assert(device_words(kind::complete) == 2, "a complete record on a stream has two device words");
  std::uint64_t* p = reserve(6);
  if (NPUPROF_UNLIKELY(p == nullptr)) return false;
  // The drainer read the buffer's recycled lines on another core; fetch the
  // next few ranges' line now, as the event pool does for its own lines.
  if (st.can_prefetch.load(std::memory_order_relaxed)) prefetch_for_write(p + 32);
  constexpr std::size_t after = fixed_words(kind::complete);  // the stream word, then the device words
  static_assert(after + 3 == 6, "a complete record on a stream takes six words");
  p[word::ticks] = first;
  p[word::tag] = tag | stream_bit | device_bit;
  p[word::end_ticks] = end;
  p[after] = reinterpret_cast<std::uintptr_t>(stream);
  p[after + 1] = dev.seq[0];
  p[after + 2] = dev.seq[1];
  commit(p + 6);
  return true;
}

/// The begin of a scoped range with a registered message: nothing is written
/// until its end, which writes one record. The range is counted as open on
/// this thread meanwhile (a trace cut before its end can only count it),
/// without a locked instruction: only the owning thread changes the count.
/// False when this thread cannot record; the event is counted.
NPUPROF_ALWAYS_INLINE bool begin_scoped() noexcept {
  thread_buffer* tb = this_thread_buffer();
  if (NPUPROF_UNLIKELY(tb == nullptr)) {
    count_unregistered();
    return false;
  }
  tb->open_scoped.store(tb->open_scoped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return true;
}

/// The end of a scoped range that begin_scoped() began: its one record, from
/// its begin's `begin_ticks` and `tag` (kind::complete) to now. `device` is
/// what begin_device_event() gave at the begin when it is tied to `stream`.
NPUPROF_ALWAYS_INLINE void end_scoped(std::uint64_t begin_ticks, std::uint64_t tag, stream_t stream,
                                      std::uint64_t device) noexcept {
  if (stream == nullptr) {
    write3(begin_ticks, tag, raw_ticks());
  } else {
    write_complete_on_stream(begin_ticks, tag, stream, device);
  }
  scoped_ended(t_buffer);
}

/// One sample of a counter.
inline bool write_counter(std::uint32_t index, const message& name, std::uint64_t value_bits,
                          std::uint64_t flags) noexcept {
  const device_seqs none;
  if (name.is_registered()) {
    std::uint64_t head[4] = {raw_ticks(), make_tag(kind::counter_ref, index, name.id()), value_bits, flags};
    return write_general(head, 4, nullptr, none, nullptr, 0);
  }
  const std::size_t len = name.copy_length();
  std::uint64_t head[4] = {raw_ticks(), make_tag(kind::counter_copy, index, len), value_bits, flags};
  return write_general(head, 4, nullptr, none, name.text(), len);
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
