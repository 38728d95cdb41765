// Collection schedule: which steps record, with the semantics of
// torch_npu.profiler.schedule, so that users of the Ascend PyTorch profiler
// find the same numbers doing the same thing.
#pragma once

#include "marker/abi.hpp"

#include <string>

namespace npuprof {
NPUPROF_ABI_BEGIN

/// What a step does under a schedule.
enum class step_action {
  none,             // records nothing
  warmup,           // records nothing; buffers are made ready
  record,           // records
  record_and_save,  // records; the cycle is written when the step ends
};

/// The action's name, as the trace's metadata writes it.
inline const char* to_string(step_action a) noexcept {
  switch (a) {
    case step_action::none:
      return "none";
    case step_action::warmup:
      return "warmup";
    case step_action::record:
      return "record";
    case step_action::record_and_save:
      return "record_and_save";
  }
  return "?";
}

/// `schedule{wait, active, warmup, repeat, skip_first}`: the first
/// `skip_first` steps do nothing; then each cycle waits `wait` steps, warms
/// up for `warmup` and records `active`, and is written as its own output
/// directory when its last recording step ends. With `repeat > 0` nothing is
/// recorded after that many cycles. session::step() ends a step.
///
///     cfg.schedule = npuprof::schedule{/*wait*/ 1, /*active*/ 2, /*warmup*/ 1};
struct schedule {
  long wait = 0;
  long active = 1;
  long warmup = 0;
  long repeat = 0;
  long skip_first = 0;

  /// The action of step `step` (counted from 0).
  step_action action(long step) const noexcept {
    if (step < skip_first) return step_action::none;
    const long cycle = wait + warmup + active;
    const long n = step - skip_first;
    if (repeat > 0 && n / cycle >= repeat) return step_action::none;
    const long m = n % cycle;
    if (m < wait) return step_action::none;
    if (m < wait + warmup) return step_action::warmup;
    return m == cycle - 1 ? step_action::record_and_save : step_action::record;
  }

  /// Why these values make no schedule; empty when they do.
  std::string problem() const {
    if (active <= 0) return "active must be at least 1, got " + std::to_string(active);
    if (wait < 0) return "wait must not be negative, got " + std::to_string(wait);
    if (warmup < 0) return "warmup must not be negative, got " + std::to_string(warmup);
    if (repeat < 0) return "repeat must not be negative (0 repeats forever), got " + std::to_string(repeat);
    if (skip_first < 0) return "skip_first must not be negative, got " + std::to_string(skip_first);
    return {};
  }
};

NPUPROF_ABI_END
}  // namespace npuprof
