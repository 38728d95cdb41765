// An operator library on two device streams: host-side ranges for the work
// on the CPU, stream-tied ranges for what runs on the device, and the arrows
// between them in the timeline.
//
// There is no NPU here: the kernels run on npuprof's SIMULATED Ascend
// runtime (build/tests/doubles/simulated_acl/libascendcl.so), which behaves like the real
// one for streams and events. With a real device, link libascendcl.so and
// drop the npuprof_sim_* calls; npuprof loads the runtime by itself.
//
//     build/examples/operator [--db]
//
// With --db (or NPUPROF_EXPORT_TYPE=text,db) the trace directory also holds
// the database MindStudio Insight and msprof-analyze read. Each pass over
// the layers is a step (session::step()): ProfilerStep#N in both.

// npuprof's implementation comes from src/implementation.cpp, compiled once
// for the examples that link it (examples/meson.build).
#include <npuprof/session.hpp>
#if defined(NPUPROF_EXAMPLE_DATABASE)
#include <npuprof/database.hpp>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "simulated_acl.h"

struct ops {
  static constexpr const char* name = "ops";
};
struct copies {
  static constexpr const char* name = "copies";
};

namespace {

// A launch as a real operator would do it: host work (tiling, argument
// packing), then an asynchronous kernel on the stream.
void gemm(aclrtStream stream, int m) {
  static const npuprof::registered_string<ops> kGemm{"gemm"};
  npuprof::scoped_range<ops> device{kGemm, stream};  // host time + device time on `stream`
  {
    NPUPROF_RANGE(ops, "tiling");  // host only
    std::this_thread::sleep_for(std::chrono::microseconds(30));
  }
  npuprof_sim_launch_kernel(stream, 400 * m);  // aclnnMatmul(...) on a device
}

void copy_to_device(aclrtStream stream, int bytes_kb) {
  npuprof::scoped_range<copies> r{"h2d " + std::to_string(bytes_kb) + " KiB", stream};
  npuprof_sim_launch_kernel(stream, 2 * bytes_kb);  // aclrtMemcpyAsync(...)
}

}  // namespace

int main(int argc, char** argv) {
  npuprof::config cfg = npuprof::config::from_env();
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--db") != 0) {
      std::fprintf(stderr, "usage: %s [--db]\n", argv[0]);
      return 2;
    }
#if defined(NPUPROF_EXAMPLE_DATABASE)
    cfg.export_type = {"text", "db"};
#else
    std::fprintf(stderr, "operator: built without SQLite (Debian: libsqlite3-dev): no database\n");
#endif
  }
  // Traces go under ./npuprof_traces/ unless NPUPROF_OUTPUT_DIR or the config file names
  // another directory.
  if (std::getenv("NPUPROF_OUTPUT_DIR") == nullptr && cfg.output_dir == ".") cfg.output_dir = "npuprof_traces";
  if (cfg.acl_library.empty()) cfg.acl_library = npuprof_sim_library_path();
  npuprof::session session{cfg};
  session.start();
  npuprof::name_thread("operator thread");

  aclrtStream compute = nullptr, transfer = nullptr;
  aclrtCreateStream(&compute);
  aclrtCreateStream(&transfer);
  npuprof::name_stream(compute, "compute");
  npuprof::name_stream(transfer, "transfer");

  for (int step = 0; step < 2; ++step) {
    for (int layer = 0; layer < 4; ++layer) {
      NPUPROF_RANGE(ops, "layer");
      copy_to_device(transfer, 256 + 64 * layer);
      gemm(compute, 1 + layer % 3);
      gemm(compute, 2);
      npuprof::mark<ops>("layer queued", compute);  // a device mark where the stream gets to it
    }
    session.step();  // ends ProfilerStep#0, #1
  }
  aclrtSynchronizeStream(compute);
  aclrtSynchronizeStream(transfer);

  const auto dir = session.stop();
  const auto& data = session.data();
  std::printf("npuprof: %zu host events, %zu device events (%s runtime)\n", data.events.size(),
              data.device_events.size(), data.device_simulated ? "SIMULATED" : "Ascend");
  std::printf("npuprof: trace written to %s\n", (dir / "trace_view.json").c_str());
  if (std::filesystem::exists(dir / "ASCEND_PROFILER_OUTPUT")) {
    std::printf("npuprof: database written to %s\n", (dir / "ASCEND_PROFILER_OUTPUT").c_str());
  }
  std::printf("         open it in https://ui.perfetto.dev, chrome://tracing or MindStudio Insight\n");
  aclrtDestroyStream(compute);
  aclrtDestroyStream(transfer);
}
