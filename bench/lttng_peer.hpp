// The LTTng-UST peer: a tracing session started and ended around its rows
// with the `lttng` command-line tool (package lttng-tools), as a user would.
//
// A session daemon is spawned by `lttng create` when none runs; one that this
// program spawned is ended with the session. The session records into
// buffers large enough for one benchmark run, in LTTng's default discard
// mode: events it had to discard are read back and reported, because a
// discarded event costs the program less than a recorded one.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "lttng_tp.h"

namespace lttng_peer {

inline bool run(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

inline std::string output_of(const std::string& command) {
  std::string text;
  if (FILE* p = popen((command + " 2>/dev/null").c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, p) != nullptr) text += buf;
    pclose(p);
  }
  return text;
}

class session {
 public:
  /// Creates, configures and starts the session; true once this process's
  /// tracepoints are enabled by it. `why` says what failed otherwise.
  bool start(std::string& why) {
    if (!run("command -v lttng")) {
      why = "lttng (lttng-tools) not installed";
      return false;
    }
    daemon_was_running_ = run("pgrep -x lttng-sessiond");
    const std::string s = " --session=" + name_;
    if (!run("lttng create " + name_ + " --output=" + dir_)) {
      why = "lttng create failed (no session daemon could be reached or started)";
      return false;
    }
    created_ = true;
    if (!run("lttng enable-channel --userspace --subbuf-size=8M --num-subbuf=8" + s + " bench") ||
        !run("lttng enable-event --userspace --channel=bench" + s + " 'npuprof_bench:*'") ||
        !run("lttng start " + name_)) {
      why = "lttng could not enable the events or start the session";
      return false;
    }
    // The application learns of the session from the daemon, asynchronously.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!lttng_ust_tracepoint_enabled(npuprof_bench, range_begin)) {
      if (std::chrono::steady_clock::now() > give_up) {
        why = "the session started, but this program's tracepoints were not enabled within 10 s";
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

  /// Events the session had to discard so far (-1: unknown).
  long discarded() const {
    const std::string text = output_of("lttng list " + name_);
    const auto at = text.find("Discarded events:");
    if (at == std::string::npos) return -1;
    return std::strtol(text.c_str() + at + 17, nullptr, 10);
  }

  /// Ends the session, removes what it wrote, and ends a daemon this
  /// program spawned.
  void stop() {
    if (!created_) return;
    run("lttng destroy " + name_);
    created_ = false;
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    if (!daemon_was_running_) run("pkill -x lttng-sessiond");
  }

  ~session() { stop(); }

 private:
  std::string name_ = "npuprof-bench-" + std::to_string(getpid());
  std::string dir_ = "/tmp/" + name_;
  bool created_ = false;
  bool daemon_was_running_ = false;
};

}  // namespace lttng_peer
