// Ranges: scoped_range (RAII, same thread), unique_range (RAII, movable) and
// range_start/range_end (explicit, the end may come from another thread).
#pragma once

#include "marker/abi.hpp"

#include <cstdint>
#include <type_traits>
#include <utility>

#include "clock.hpp"
#include "marker/forward.hpp"
#include "marker/message.hpp"
#include "marker/writer.hpp"
#include "domain.hpp"
#include "filter.hpp"
#include "stream.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

/// Identifies a range begun with range_start; 0 means "not recorded", and
/// ending it does nothing.
using range_id = std::uint64_t;

namespace detail {

/// What a scoped range remembers between its begin and its end. With a
/// registered message nothing is written until the end, which writes one
/// complete record; a copied message is written at once (its text may not
/// outlive the constructor) and matched with the end by id.
class scoped_core {
 public:
  NPUPROF_ALWAYS_INLINE void begin(domain_handle& h, message m, stream_t stream) noexcept {
    const std::uint16_t s = recording_state(h);
    if (s == 0) return;
    stream_ = stream;
    if (NPUPROF_UNLIKELY(s & forward_bit)) forward_begin(s, m, stream);
    if (m.is_registered()) {
      if (NPUPROF_UNLIKELY(!begin_scoped())) return;
      tag_ = make_tag(kind::complete, tag_index(s), m.id());
      word_ = raw_ticks();
      if (stream != nullptr) device_ = begin_device_event(stream);
      return;
    }
    begin_copied(tag_index(s), m);
  }

  NPUPROF_ALWAYS_INLINE void end() noexcept {
    if (NPUPROF_UNLIKELY(forwarded_ != 0)) forward_range_end(forward_domain_, forwarded_);
    if (tag_ == 0) return;
    if (tag_kind(tag_) != kind::complete) {
      write_end(tag_domain(tag_), word_, stream_);
      return;
    }
    end_scoped(word_, tag_, stream_, device_);
  }

 private:
  void forward_begin(std::uint16_t s, message m, stream_t stream) noexcept {
    forwarded_ = forward_range_start(s, m, stream);
    forward_domain_ = forwarded_domain(s);
  }

  // Out of line: copying is the slower path, and keeps the inline part small.
  void begin_copied(std::uint32_t index, message m) noexcept {
    const std::uint64_t id = next_range_id();
    if (id != 0 && write_begin(index, m, id, stream_)) {
      tag_ = make_tag(kind::end, index, 0);
      word_ = id;
    }
  }

  // Kept to five words and a half, all zero when nothing records: a disabled
  // range costs these few stores, a load and two branches.
  std::uint64_t tag_ = 0;   // the record the end writes; 0: not recording
  std::uint64_t word_ = 0;  // begin ticks (complete records) or range id (copied messages)
  stream_t stream_ = nullptr;
  std::uint64_t device_ = 0;     // begin_device_event() of a complete record on a stream
  std::uint64_t forwarded_ = 0;  // the range's id in the tool markers are forwarded to
  std::uint32_t forward_domain_ = 0;
};

struct no_core {
  void begin(domain_handle&, const message&, stream_t) noexcept {}
  void end() noexcept {}
};

template <class D>
using scoped_core_for = std::conditional_t<compiled_in<D>, scoped_core, no_core>;

inline range_id start_range(domain_handle& h, const message& m, stream_t stream) noexcept {
  const std::uint16_t s = recording_state(h);
  if (s == 0) return 0;
  const range_id id = next_range_id();
  if (id == 0 || !write_begin(tag_index(s), m, id, stream)) return 0;
  if (NPUPROF_UNLIKELY(s & forward_bit)) forward_id_range_start(s, m, stream, id);
  return id;
}

inline void end_range(domain_handle& h, range_id id, stream_t stream) noexcept {
  // Recorded whatever the domain's state, as the begin may have been; a
  // state of 0 names no domain (the index the tag keeps is past the last).
  const std::uint16_t s = h.state.load(std::memory_order_relaxed);
  write_end(tag_index(s), id, stream);
  if (NPUPROF_UNLIKELY(s & forward_bit)) forward_id_range_end(id);
}

}  // namespace detail

/// Begins a range that may end on any thread. Returns 0 when it is not
/// recorded (filtered, no session, or dropped); range_end(0) does nothing.
/// The id is the only way to end the range: dropping it leaves the range open.
template <class D = default_domain>
[[nodiscard]] NPUPROF_ALWAYS_INLINE range_id range_start(detail::message msg, stream_t stream = nullptr) noexcept {
  NPUPROF_DETAIL_CHECK_DOMAIN(D);
  if constexpr (compiled_in<D>) {
    return detail::start_range(detail::handle_of<D>, msg, stream);
  } else {
    (void)msg, (void)stream;
    return 0;
  }
}

/// As above, in the run-time domain `d`.
[[nodiscard]] inline range_id range_start(runtime_domain d, detail::message msg, stream_t stream = nullptr) noexcept {
  if constexpr (compiled_in<runtime_domain>) {
    return detail::start_range(d.handle(), msg, stream);
  } else {
    (void)d, (void)msg, (void)stream;
    return 0;
  }
}

/// Ends a range begun with range_start, on this or any other thread. The end
/// is recorded even if the filter changed since the begin. An unknown or
/// repeated id is ignored when the trace is written, and counted.
template <class D = default_domain>
NPUPROF_ALWAYS_INLINE void range_end(range_id id, stream_t stream = nullptr) noexcept {
  NPUPROF_DETAIL_CHECK_DOMAIN(D);
  if constexpr (compiled_in<D>) {
    if (id != 0) detail::end_range(detail::handle_of<D>, id, stream);
  } else {
    (void)id, (void)stream;
  }
}

/// As above, for a range begun in the run-time domain `d`.
inline void range_end(runtime_domain d, range_id id, stream_t stream = nullptr) noexcept {
  if constexpr (compiled_in<runtime_domain>) {
    if (id != 0) detail::end_range(d.handle(), id, stream);
  } else {
    (void)id, (void)stream;
  }
}

/// A range that lasts as long as this object, on one thread. Neither copyable
/// nor movable, so it always nests. Use it with a registered string or a
/// macro for the cheapest range there is:
///
///     npuprof::scoped_range<kernels> r{kGemm, stream};
///     npuprof::scoped_range r2{npuprof::domain_by_name("comm"), "allreduce"};
///
/// Cost: with a registered string and no stream, a counter read at each end
/// and one three-word record written at the end; a domain that does not
/// record costs a load and a branch, one compiled out nothing. A copied
/// message writes a begin and an end record. Construct and destroy it on
/// the same thread; any number of threads may hold their own.
template <class D = default_domain>
class scoped_range {
  static_assert(std::is_same_v<D, runtime_domain> || is_domain_v<D>,
                "npuprof: a domain is a type with a compile-time name, for example "
                "`struct kernels { static constexpr const char* name = \"kernels\"; };`");

 public:
  /// Begins the range: `msg` a registered_string (cheapest) or text that is
  /// copied; `stream` ties it to a device stream (see stream.hpp).
  explicit scoped_range(detail::message msg, stream_t stream = nullptr) noexcept {
    core_.begin(detail::handle_of<D>, msg, stream);
  }
  /// For a run-time domain: `npuprof::scoped_range r{domain, msg};`.
  scoped_range(runtime_domain d, detail::message msg, stream_t stream = nullptr) noexcept {
    static_assert(std::is_same_v<D, runtime_domain>,
                  "npuprof: for a run-time domain write `npuprof::scoped_range r{domain, msg};`");
    core_.begin(d.handle(), msg, stream);
  }
  /// Ends the range: its record is written now.
  NPUPROF_ALWAYS_INLINE ~scoped_range() { core_.end(); }

  scoped_range(const scoped_range&) = delete;
  scoped_range& operator=(const scoped_range&) = delete;
  scoped_range(scoped_range&&) = delete;
  scoped_range& operator=(scoped_range&&) = delete;

 private:
  detail::scoped_core_for<D> core_;
};

scoped_range(runtime_domain, detail::message)->scoped_range<runtime_domain>;
scoped_range(runtime_domain, detail::message, stream_t)->scoped_range<runtime_domain>;

/// A range owned by this object, which may be moved (to another scope or
/// thread); the range ends when the last owner is destroyed or reset() is
/// called. Cost: a begin and an end record, matched by an id; the end may
/// be written on another thread than the begin (the trace shows both).
///
///     npuprof::unique_range<serving> request{"request", stream};
///     queue.push(std::move(request));  // ends where the request is done
template <class D = default_domain>
class unique_range {
 public:
  /// Begins the range, as range_start() does.
  explicit unique_range(detail::message msg, stream_t stream = nullptr) noexcept
      : id_(range_start<D>(msg, stream)), stream_(stream), handle_(handle_for()) {}
  /// Begins the range in the run-time domain `d`.
  unique_range(runtime_domain d, detail::message msg, stream_t stream = nullptr) noexcept
      : id_(range_start(d, msg, stream)), stream_(stream), handle_(&d.handle()) {
    static_assert(std::is_same_v<D, runtime_domain>,
                  "npuprof: for a run-time domain write `npuprof::unique_range r{domain, msg};`");
  }
  ~unique_range() {
    if constexpr (compiled_in<D>) reset();
  }

  /// Takes the range over: `other` no longer ends it.
  unique_range(unique_range&& other) noexcept
      : id_(std::exchange(other.id_, 0)), stream_(other.stream_), handle_(other.handle_) {}
  unique_range& operator=(unique_range&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, 0);
      stream_ = other.stream_;
      handle_ = other.handle_;
    }
    return *this;
  }
  unique_range(const unique_range&) = delete;
  unique_range& operator=(const unique_range&) = delete;

  /// Ends the range now (once).
  void reset() noexcept {
    if (id_ != 0) detail::end_range(*handle_, std::exchange(id_, 0), stream_);
  }

  /// The id of the range, 0 when not recorded or already ended.
  range_id id() const noexcept { return id_; }

 private:
  static detail::domain_handle* handle_for() noexcept {
    if constexpr (std::is_same_v<D, runtime_domain>) {
      return nullptr;  // not reached: run-time domains use the other constructor
    } else {
      return &detail::handle_of<D>;
    }
  }

  range_id id_;
  stream_t stream_;
  detail::domain_handle* handle_;
};

unique_range(runtime_domain, detail::message)->unique_range<runtime_domain>;
unique_range(runtime_domain, detail::message, stream_t)->unique_range<runtime_domain>;

NPUPROF_ABI_END
}  // namespace npuprof
