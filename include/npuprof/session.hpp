// The session: the one place recording is switched on, drained and written.
//
// This is the control header: include it in the file that starts profiling.
// Files that only place markers include <npuprof/npuprof.hpp>, which this
// header includes too.
//
// The header is light: it declares the session. What runs it (the drainer,
// the decoder, the writers, JSON and formatting) is compiled once, in the
// one file of the program that defines NPUPROF_IMPLEMENTATION before it
// includes this header:
//
//     #define NPUPROF_IMPLEMENTATION
//     #include <npuprof/session.hpp>
//
// Other files include it without the define. No library is built apart.
#ifndef NPUPROF_SESSION_HPP
#define NPUPROF_SESSION_HPP

#include "marker/abi.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json_fwd.hpp>

#include "config.hpp"
#include "domain_filter.hpp"
#include "error.hpp"
#include "npuprof.hpp"
#include "schedule.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

struct trace_data;
namespace detail {
class session_core;
/// Defined only by the file that defines NPUPROF_IMPLEMENTATION: a program
/// that has no such file fails to link, naming this.
extern const int define_NPUPROF_IMPLEMENTATION_in_one_source_file;
}  // namespace detail

/// Records markers between start() and stop(), then writes an output
/// directory with trace_view.json, profiler_metadata.json and
/// range_summary.csv. One session can run at a time in a process; one still
/// running when the process exits is stopped and written then.
///
///     npuprof::session s{npuprof::config::from_env()};
///     s.start();
///     ...
///     std::filesystem::path dir = s.stop();
///
/// With a schedule (config::schedule), step() ends each step and every
/// completed cycle is written as its own directory. As a flight recorder
/// (config::flight) the session keeps only its last window and dump() writes
/// it while recording goes on.
///
/// After fork() the child records nothing into the parent's session (its copy
/// refuses stop() and the other calls) and may start a session of its own;
/// the parent's trace is unaffected. A device runtime does not survive fork():
/// a child's session should be host only.
class session {
 public:
  /// A session with `cfg` (by default: the defaults and the environment),
  /// not yet started. Throws config_error when `cfg` is not valid.
  explicit session(config cfg = config::from_env())
      : session(std::move(cfg), detail::define_NPUPROF_IMPLEMENTATION_in_one_source_file) {}

  /// A session still running is stopped and written (a flight recorder
  /// with dump_at_exit false only stops). Waits for dumps that other threads
  /// began through npuprof::dump() to return.
  ~session();

  session(const session&) = delete;
  session& operator=(const session&) = delete;

  /// Starts recording. Throws npuprof::error when this or another session is
  /// already running.
  void start();

  /// Stops recording and writes the output directory under the configured
  /// output_dir. Returns its path. Throws npuprof::error when it cannot be
  /// written; the data is kept, and write_to() can write it elsewhere.
  /// Under a schedule, writes the cycle in progress if it was recording and
  /// returns the last directory written (empty when there was none).
  std::filesystem::path stop();

  /// Stops recording and throws away what was recorded, writing nothing.
  void cancel();

  /// Throws away what was recorded so far (every event stamped before the
  /// call, and the drop counts) and goes on recording.
  void clear();

  /// Ends the current step. Under a schedule, the next step's action takes
  /// effect, and the cycle whose last recording step just ended is written
  /// (on this thread). Without one, steps are only counted.
  void step();

  /// Writes what the session holds now (a flight recorder: its window) into
  /// a new output directory and returns its path; recording goes on, and
  /// nothing is taken away, so two dumps in a row give two complete traces.
  std::filesystem::path dump(const std::string& reason = "requested");

  /// Writes the data of the last stop() into a new output directory under
  /// `parent` and returns its path.
  std::filesystem::path write_to(const std::string& parent);

  /// Whether the session records now: between start() and stop().
  bool running() const noexcept;
  /// The configuration it runs with, validated.
  const config& configuration() const noexcept;
  /// The directory the session wrote last.
  std::filesystem::path output_path() const;
  /// The events of the last stop() (or schedule cycle), decoded when first
  /// asked for: a trace is written without decoding all of it at once, and
  /// the records stay (outside the memory cap) until the next stop() or
  /// cycle, which the returned reference is valid until. Include
  /// <npuprof/trace_data.hpp> to read it.
  const trace_data& data() const;
  /// This session's trace id, written to the metadata: from
  /// config::trace_id_callback, else generated.
  const std::string& trace_id() const noexcept;
  /// Steps ended so far, and what the current one does.
  long current_step() const noexcept;
  /// What the schedule does in the current step: nothing, warm up, record.
  step_action current_action() const noexcept;

  /// Adds `key: value` to the "user" section of profiler_metadata.json (the
  /// model, the build, the request mix...). A later value for a key wins.
  /// Include <nlohmann/json.hpp> to make a value.
  void add_metadata(const std::string& key, const nlohmann::json& value);

  /// Where live metrics are served while the session runs ("host:port",
  /// with the port taken for port 0), or "" when they are not.
  std::string metrics_address() const;

 private:
  session(config cfg, int implementation);
  std::unique_ptr<detail::session_core> core_;
};

/// Dumps the running session (see session::dump): for an admin endpoint or a
/// watchdog of a server running a flight recorder. Throws npuprof::error when
/// no session is running.
std::filesystem::path dump(const std::string& reason = "requested");

NPUPROF_ABI_END
}  // namespace npuprof

#endif  // NPUPROF_SESSION_HPP

#ifdef NPUPROF_IMPLEMENTATION
#include "control/implementation.hpp"
#endif
