// Reading records back: one dispatch over the record kinds, and each field
// by its meaning, for every reader of the buffers (the decoder that writes
// traces, and live metrics).
#pragma once

#include "../marker/abi.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "../marker/record.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// A counter's sample as recorded: an int64, or a double.
struct counter_sample {
  bool is_double = false;
  std::int64_t i64 = 0;
  double f64 = 0;

  double as_double() const noexcept { return is_double ? f64 : static_cast<double>(i64); }
};

/// One record of a buffer, its fields by meaning (see record.hpp for where
/// each lies).
class record_view {
 public:
  explicit record_view(const std::uint64_t* p) noexcept : p_(p), tag_(p[word::tag]) {}

  const std::uint64_t* words() const noexcept { return p_; }
  kind what() const noexcept { return tag_kind(tag_); }
  std::uint32_t domain() const noexcept { return tag_domain(tag_); }
  /// When it happened; a complete range's begin.
  std::uint64_t ticks() const noexcept { return p_[word::ticks]; }
  /// A complete range's end.
  std::uint64_t end_ticks() const noexcept { return p_[word::end_ticks]; }
  /// The id of a range begun or ended with one.
  std::uint64_t range_id() const noexcept { return p_[word::range_id]; }

  /// Whether the name is a registered string (its id()), else copied (text()).
  bool registered() const noexcept { return !has_copied_bytes(what()); }
  std::uint64_t name_id() const noexcept { return tag_payload(tag_); }
  std::string_view name_text() const noexcept {
    return {reinterpret_cast<const char*>(p_ + fixed_words(what()) + stream_words(tag_)),
            static_cast<std::size_t>(tag_payload(tag_))};
  }

  /// The stream it is tied to, 0 when none.
  std::uint64_t stream() const noexcept { return tag_has_stream(tag_) ? stream_word(p_) : 0; }
  /// Whether it has device events; their sequence numbers (0: its begin or
  /// only event, 1: a complete range's end).
  bool has_device() const noexcept { return tag_has_device(tag_); }
  std::uint64_t device_seq(std::size_t i) const noexcept { return device_word(p_, i); }

  /// A counter's sample.
  counter_sample sample() const noexcept {
    counter_sample s;
    s.is_double = (p_[word::flags] & counter_is_double) != 0;
    if (s.is_double) {
      std::memcpy(&s.f64, &p_[word::value], sizeof(double));
    } else {
      s.i64 = static_cast<std::int64_t>(p_[word::value]);
    }
    return s;
  }

 private:
  const std::uint64_t* p_;
  std::uint64_t tag_;
};

/// Calls the member of `v` that record `p`'s kind asks for, with the record:
/// complete(r) (a scoped range, written at its end), begin(r) and end(r) (a
/// range with an id), mark(r) or counter(r).
template <class Visitor>
void visit_record(const std::uint64_t* p, Visitor& v) {
  const record_view r(p);
  switch (r.what()) {
    case kind::complete:
      return v.complete(r);
    case kind::begin_ref:
    case kind::begin_copy:
      return v.begin(r);
    case kind::end:
      return v.end(r);
    case kind::mark_ref:
    case kind::mark_copy:
      return v.mark(r);
    case kind::counter_ref:
    case kind::counter_copy:
      return v.counter(r);
  }
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
