// A session's steps under its schedule: which step it is, what that step
// does, which cycle is being recorded, and what a cycle's metadata says.
// step() asks it what the step that ended and the one that begins call for,
// and acts on the answer (switch recording, write a cycle, start afresh).
#pragma once

#include "../marker/abi.hpp"

#include <optional>

#include <nlohmann/json.hpp>

#include "../schedule.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Whether a step that does `a` records.
constexpr bool records(step_action a) noexcept { return a == step_action::record || a == step_action::record_and_save; }

/// What one step() calls for, decided by the schedule alone.
struct step_change {
  step_action ended;   // what the step that ended did
  step_action begins;  // what the step that begins does
  /// The ended step closed a cycle: write what it recorded.
  bool saves_cycle() const noexcept { return ended == step_action::record_and_save; }
  /// Recording starts again after steps that did not record: a new cycle
  /// begins, and what came before belongs to none.
  bool resumes() const noexcept { return !records(ended) && records(begins); }
};

class schedule_driver {
 public:
  /// Without a schedule every step records and no cycle is ever written.
  explicit schedule_driver(std::optional<schedule> s = {}) : schedule_(std::move(s)) { restart(); }

  /// Back to step 0 of cycle 0 (start()).
  void restart() {
    step_ = 0;
    cycle_ = 0;
    action_ = schedule_ ? schedule_->action(0) : step_action::record;
  }

  /// Ends the current step.
  step_change advance() {
    const step_action ended = action_;
    ++step_;
    if (schedule_) action_ = schedule_->action(step_);
    return {ended, action_};
  }

  /// The cycle that ended was written: the next one counts on.
  void cycle_written() noexcept { ++cycle_; }

  bool scheduled() const noexcept { return schedule_.has_value(); }
  long step() const noexcept { return step_; }
  long cycle() const noexcept { return cycle_; }
  step_action action() const noexcept { return action_; }

  /// The metadata's "collection" of the cycle being recorded: ended by its
  /// last step, or cut short by stop() (`partial`).
  nlohmann::json cycle_note(bool partial) const {
    const schedule& s = *schedule_;
    const long last = partial ? step_ : step_ - 1;
    const long cycle_start = s.skip_first + cycle_ * (s.wait + s.warmup + s.active) + s.wait + s.warmup;
    return {{"mode", "schedule"},
            {"cycle", cycle_},
            {"record_steps", {cycle_start, last}},
            {"complete", !partial},
            {"schedule", schedule_json(s)}};
  }

 private:
  std::optional<schedule> schedule_;
  long step_ = 0;
  long cycle_ = 0;
  step_action action_ = step_action::record;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
