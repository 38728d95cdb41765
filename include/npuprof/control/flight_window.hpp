// A flight recorder's side of a session: the window a trace is cut to, and
// the dumps a signal asks for, written on a thread of their own.
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include "../engine/collected.hpp"
#include "../engine/drainer.hpp"
#include "../flight_recorder.hpp"
#include "../marker/diagnostics.hpp"
#include "drained_records.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Cuts `c`, which ends at `end_ns`, to the last `f.window_s` seconds, and
/// says from when it is complete: the memory cap let go of records up to
/// `evicted.until_ns`.
inline void cut_to_window(collected& c, std::int64_t end_ns, eviction evicted, const flight_recorder& f) {
  trace_data& d = c.header;
  const std::int64_t from = std::max(d.start_ns, end_ns - static_cast<std::int64_t>(f.window_s * 1e9));
  c.window = true;
  c.window_from_ns = from;
  c.complete_from_ns = std::max(from, evicted.until_ns);
  d.wall_start_ns += from - d.start_ns;  // the trace starts with its window
  d.start_ns = from;
  d.counts.evicted_bytes = evicted.bytes;
  d.collection["mode"] = "flight_recorder";
  d.collection["window_s"] = f.window_s;
  d.collection["window_start_ns"] = from;
  d.collection["complete_from_ns"] = c.complete_from_ns;
}

/// The thread that writes a dump asked for by signal, so that draining goes
/// on meanwhile. Its calls are made under the control lock.
class signal_dumper {
 public:
  /// Whether a dump by signal is being written.
  bool busy() const noexcept { return busy_.load(std::memory_order_acquire); }

  /// Writes a dump with `dump(reason)` on a thread of its own; says where it
  /// went, or why it failed. Only when not busy().
  void start(std::string reason, std::function<std::filesystem::path(const std::string&)> dump) {
    if (thread_.joinable()) thread_.join();  // finished: it cleared busy
    busy_.store(true, std::memory_order_release);
    thread_ = std::thread([this, reason = std::move(reason), dump = std::move(dump)] {
      try {
        const std::filesystem::path dir = dump(reason);
        say("%s: flight recorder window written to %s", reason.c_str(), dir.string().c_str());
      } catch (const std::exception& e) {
        say_error(e.what());
      }
      busy_.store(false, std::memory_order_release);
    });
  }

  /// Takes the thread, for the caller to wait for outside the control lock:
  /// join() it, or detach() it when the caller is that thread (a dump's
  /// on_trace_ready that stops the session); it clears busy() last.
  std::thread retire() { return std::move(thread_); }

  /// In a fork() child: the thread is the parent's.
  void abandon_in_child() noexcept {
    if (thread_.joinable()) keep_parents_thread(std::move(thread_));
  }

 private:
  std::thread thread_;
  std::atomic<bool> busy_{false};
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
