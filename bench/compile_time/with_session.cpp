// The file of a program that starts profiling, written with npuprof's control
// header (not the one file that compiles the implementation): what every
// such file pays. compile_time.py compiles it beside with_npuprof.cpp.
#include <npuprof/session.hpp>

struct server {
  static constexpr const char* name = "server";
};

int serve(int requests) {
  npuprof::config cfg = npuprof::config::from_env();
  cfg.flight.enabled = true;
  cfg.flight.window_s = 60;
  npuprof::session s{cfg};
  s.start();
  int done = 0;
  for (int i = 0; i < requests; ++i) {
    NPUPROF_RANGE(server, "request");
    if (i % 100 == 99) s.step();
    ++done;
  }
  if (done < requests) npuprof::dump("short");
  s.stop();
  return done;
}
