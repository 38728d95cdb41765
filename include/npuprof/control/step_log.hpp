// The steps of a run, as session::step() ends them: ProfilerStep#N slices.
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "../clock.hpp"
#include "../engine/state.hpp"
#include "../trace_data.hpp"

#include <nlohmann/json.hpp>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// The ended steps (the latest max_kept of them) and when the current one
/// began. Bounds are raw counter ticks, as the records' are, so that the
/// same clock map puts a record between the two step() calls it came
/// between. Guarded by the control lock.
class step_log {
 public:
  static constexpr std::size_t max_kept = std::size_t{1} << 16;

  /// A run begins at `start_ticks`, with no step ended yet.
  void restart(std::uint64_t start_ticks) {
    *this = step_log{};
    began_ = start_ticks;
  }

  /// Step `id` ends at `now_ticks`; the next begins there.
  void end(long id, std::uint64_t now_ticks) {
    ended_.push_back({id, began_, now_ticks});
    if (ended_.size() > max_kept) {
      ended_.pop_front();
      ++let_go_;
    }
    began_ = now_ticks;
    stepped_ = true;
  }

  /// The steps kept, and with `with_current` step `current` too, ending at
  /// `end`, in the nanoseconds of the data that ends there. None until a
  /// step ended.
  std::vector<step_span> spans(bool with_current, long current, clock_point end) const {
    const clock_calibration clock(state().origin, end);
    std::vector<step_span> out;
    out.reserve(ended_.size() + 1);
    for (const step_ticks& s : ended_) out.push_back({s.id, clock.to_ns(s.begin), clock.to_ns(s.end)});
    if (with_current && stepped_) out.push_back({current, clock.to_ns(began_), end.steady});
    return out;
  }

  /// Steps ended and let go, the oldest, past max_kept.
  std::uint64_t let_go() const noexcept { return let_go_; }

 private:
  struct step_ticks {
    long id;
    std::uint64_t begin, end;
  };
  std::deque<step_ticks> ended_;
  std::uint64_t let_go_ = 0;
  std::uint64_t began_ = 0;
  bool stepped_ = false;
};

/// Cuts `d`'s steps to its data, which ends at `end_ns`: a cycle's or a
/// window's. Where older steps were let go and the data begins before the
/// oldest kept, it says from when its steps are complete. A step no longer
/// than a counter tick is kept where it lies in the data: a coarse counter
/// reads the same for two step() calls close together.
inline void cut_steps(trace_data& d, std::int64_t end_ns) {
  if (d.steps_not_kept > 0 && !d.steps.empty() && d.steps.front().start_ns > d.start_ns) {
    d.collection["steps_from_ns"] = d.steps.front().start_ns;
  }
  std::vector<step_span> kept;
  for (step_span s : d.steps) {
    const bool within = s.start_ns == s.end_ns ? d.start_ns <= s.start_ns && s.start_ns <= end_ns
                                               : d.start_ns < s.end_ns && s.start_ns < end_ns;
    s.start_ns = std::max(s.start_ns, d.start_ns);
    s.end_ns = std::min(s.end_ns, end_ns);
    if (within) kept.push_back(s);
  }
  d.steps = std::move(kept);
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
