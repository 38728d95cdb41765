// The flight recorder's settings: always-on recording of a recent window.
#pragma once

#include "marker/abi.hpp"

#include <csignal>
#include <cstddef>

namespace npuprof {
NPUPROF_ABI_BEGIN

/// `flight_recorder`: always-on mode. The session keeps only the most recent
/// window of events, within a memory cap, and writes it when asked
/// (npuprof::dump(), the signal, stop() or the end of the process).
struct flight_recorder {
  bool enabled = false;
  /// `window_s`: how far back a dump reaches.
  double window_s = 60;
  /// `memory_mb`: cap on all event memory of the session (it replaces
  /// buffer_size_kb); the window keeps at most half of it, the rest is for
  /// the chunks threads are writing and the ready reserve.
  std::size_t memory_mb = 64;
  /// `signal`: a signal that asks for a dump ("SIGUSR1", "SIGUSR2" or
  /// "none"); its handler only sets a flag, the dump runs on npuprof's thread.
  int signal = SIGUSR1;
  /// `dump_at_exit`: a session still running at exit writes its window.
  bool dump_at_exit = true;
};

NPUPROF_ABI_END
}  // namespace npuprof
