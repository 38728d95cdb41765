// Quickstart: a few domains, nested ranges, a range that ends on another
// thread, marks and a counter, written to a trace you can open in Perfetto UI,
// chrome://tracing or MindStudio Insight.
//
// Run it, then open the printed trace_view.json. Try also
//   NPUPROF_DOMAIN_EXCLUDE=comm ./quickstart     (no "comm" events)
//   NPUPROF_MSTX=0 ./quickstart                  (no events at all)

// The one file of the program that compiles npuprof's implementation.
#define NPUPROF_IMPLEMENTATION
#include <npuprof/session.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

struct kernels {
  static constexpr const char* name = "kernels";
};
struct comm {
  static constexpr const char* name = "comm";
};

namespace {

void busy_for(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

void gemm(int m) {
  NPUPROF_FUNC_RANGE(kernels);  // a range named "gemm"
  busy_for(std::chrono::microseconds(50 * m));
}

void allreduce() {
  static const npuprof::registered_string<comm> kAllreduce{"allreduce"};
  npuprof::scoped_range<comm> r{kAllreduce};
  busy_for(std::chrono::microseconds(120));
}

}  // namespace

int main() {
  npuprof::config cfg = npuprof::config::from_env();
  // Traces go under ./npuprof_traces/ unless NPUPROF_OUTPUT_DIR or the config file names
  // another directory.
  if (std::getenv("NPUPROF_OUTPUT_DIR") == nullptr && cfg.output_dir == ".") cfg.output_dir = "npuprof_traces";
  npuprof::session session{cfg};
  session.start();
  npuprof::name_thread("main");

  // A request that starts here and is finished by a worker thread.
  const npuprof::range_id request = npuprof::range_start("request 42");

  std::thread worker([request] {
    npuprof::name_thread("worker");
    for (int step = 0; step < 5; ++step) {
      NPUPROF_RANGE(kernels, "layer");
      gemm(step + 1);
      allreduce();
      npuprof::counter<kernels>("queue_depth", 5 - step);
    }
    npuprof::range_end(request);
  });

  for (int step = 0; step < 3; ++step) {
    npuprof::scoped_range<> r{"host step " + std::to_string(step)};  // copied message
    NPUPROF_MARK(kernels, "step boundary");
    busy_for(std::chrono::microseconds(300));
  }
  worker.join();
  npuprof::mark("done");

  const auto dir = session.stop();
  std::printf("npuprof quickstart: trace written to %s/trace_view.json\n", dir.c_str());
  std::printf(
      "Open it in https://ui.perfetto.dev (Open trace file), chrome://tracing (Load),\n"
      "or MindStudio Insight (Import Data). Metadata: %s/profiler_metadata.json\n",
      dir.c_str());
  return 0;
}
