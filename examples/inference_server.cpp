// A simulated inference server with npuprof as an always-on flight recorder.
//
// Two receiver threads accept requests; a scheduler thread groups them into
// batches and runs prefill and decode on a device stream; a responder thread
// answers. Each request is one range that starts on the thread that received
// it and ends on the one that answered it. Counters show the queue depth and
// the batch sizes.
//
// npuprof keeps only the last `window_s` seconds (within `memory_mb`), and
// writes them when asked: by npuprof::dump() (here when a request is slow),
// by `kill -USR1 <pid>`, and when the process exits. Every directory written
// is printed.
//
//     build/examples/inference_server [seconds] [--metrics 127.0.0.1:9464] [--db]
//
// With --db (or NPUPROF_EXPORT_TYPE=text,db) each trace directory also holds
// the database MindStudio Insight and msprof-analyze read.
//
// With --metrics (or NPUPROF_METRICS_LISTEN), npuprof also serves live
// Prometheus metrics of the same markers while the server runs: latency
// histograms of requests, prefill and decode, host and device.
//
// There is no NPU here: the device work runs on npuprof's SIMULATED Ascend
// runtime, so the device tracks are labelled as simulated.

// The one file of the program that compiles npuprof's implementation.
#define NPUPROF_IMPLEMENTATION
#include <npuprof/session.hpp>
#if defined(NPUPROF_EXAMPLE_METRICS)
#include <npuprof/metrics.hpp>
#endif
#if defined(NPUPROF_EXAMPLE_DATABASE)
#include <npuprof/database.hpp>
#endif

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <random>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "simulated_acl.h"

struct server {
  static constexpr const char* name = "server";
};
struct model {
  static constexpr const char* name = "model";
};

namespace {

using clock_type = std::chrono::steady_clock;

struct request {
  int id;
  int prompt_tokens;
  npuprof::range_id trace;  // the request's range: ended by the responder
  clock_type::time_point received;
};

// A queue between two threads; its depth is a counter track.
class request_queue {
 public:
  explicit request_queue(const char* depth_counter) : counter_(depth_counter) {}

  void push(request r) {
    std::lock_guard<std::mutex> lock(mutex_);
    items_.push_back(r);
    npuprof::counter<server>(counter_, static_cast<std::int64_t>(items_.size()));
    ready_.notify_one();
  }

  // Up to `max` requests, waiting at most `wait` for the first one.
  std::vector<request> pop(std::size_t max, std::chrono::milliseconds wait) {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait_for(lock, wait, [&] { return !items_.empty() || closed_; });
    std::vector<request> out;
    while (!items_.empty() && out.size() < max) {
      out.push_back(items_.front());
      items_.pop_front();
    }
    npuprof::counter<server>(counter_, static_cast<std::int64_t>(items_.size()));
    return out;
  }

  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    ready_.notify_all();
  }

  bool drained() {
    std::lock_guard<std::mutex> lock(mutex_);
    return closed_ && items_.empty();
  }

 private:
  const char* counter_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<request> items_;
  bool closed_ = false;
};

std::atomic<bool> accepting{true};
std::atomic<int> next_id{0};

void receiver(const char* name, request_queue& incoming, unsigned seed) {
  npuprof::name_thread(name);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> gap_us(300, 2500), tokens(16, 512);
  while (accepting.load()) {
    const int id = next_id.fetch_add(1);
    const std::string label = "request " + std::to_string(id);
    const int prompt = id == 300 ? 20'000 : tokens(rng);  // one very long prompt: a slow batch
    request r{id, prompt, npuprof::range_start<server>(label.c_str()), clock_type::now()};
    {
      NPUPROF_RANGE(server, "parse");
      std::this_thread::sleep_for(std::chrono::microseconds(40));
    }
    incoming.push(r);
    std::this_thread::sleep_for(std::chrono::microseconds(gap_us(rng)));
  }
}

// The device work of one batch: stream-tied ranges, so the trace shows both
// the launch on the host and the time on the (simulated) device.
void run_batch(aclrtStream stream, const std::vector<request>& batch) {
  static const npuprof::registered_string<model> kPrefill{"prefill"}, kDecode{"decode"};
  int tokens = 0;
  for (const request& r : batch) tokens += r.prompt_tokens;
  {
    npuprof::scoped_range<model> r{kPrefill, stream};
    npuprof_sim_launch_kernel(stream, static_cast<std::uint32_t>(200 + tokens * 2));
  }
  for (int step = 0; step < 4; ++step) {
    npuprof::scoped_range<model> r{kDecode, stream};
    npuprof_sim_launch_kernel(stream, static_cast<std::uint32_t>(150 + 20 * batch.size()));
  }
  aclrtSynchronizeStream(stream);
}

void scheduler(request_queue& incoming, request_queue& done, aclrtStream stream) {
  npuprof::name_thread("scheduler");
  for (;;) {
    std::vector<request> batch = incoming.pop(8, std::chrono::milliseconds(5));
    if (batch.empty()) {
      if (incoming.drained()) break;
      continue;
    }
    npuprof::counter<server>("batch_size", static_cast<std::int64_t>(batch.size()));
    NPUPROF_RANGE(server, "batch");
    run_batch(stream, batch);
    for (const request& r : batch) done.push(r);
  }
  done.close();
}

void responder(request_queue& done, std::chrono::milliseconds slow) {
  npuprof::name_thread("responder");
  bool dumped = false;
  for (;;) {
    std::vector<request> finished = done.pop(64, std::chrono::milliseconds(5));
    if (finished.empty() && done.drained()) break;
    for (const request& r : finished) {
      {
        NPUPROF_RANGE(server, "respond");
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      npuprof::range_end<server>(r.trace);  // begun on a receiver thread
      const auto latency = clock_type::now() - r.received;
      if (latency > slow && !dumped) {
        // What a watchdog does: keep the minutes that led to the slow request.
        dumped = true;
        npuprof::mark<server>("slow request");
        try {
          npuprof::dump("request " + std::to_string(r.id) + " took " +
                        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(latency).count()) + " ms");
        } catch (const npuprof::error& e) {
          // A full disk or a missing directory must not take the server down.
          std::fprintf(stderr, "inference_server: %s\n", e.what());
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 3.0;
  std::string metrics;
  bool database = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--metrics") == 0 && i + 1 < argc) {
      metrics = argv[++i];
    } else if (std::strcmp(argv[i], "--db") == 0) {
      database = true;
    } else {
      seconds = std::atof(argv[i]);
    }
  }

  npuprof::config cfg = npuprof::config::from_env();
  if (!metrics.empty()) cfg.metrics.listen = metrics;
  if (database) cfg.export_type = {"text", "db"};
#if !defined(NPUPROF_EXAMPLE_DATABASE)
  if (std::find(cfg.export_type.begin(), cfg.export_type.end(), "db") != cfg.export_type.end()) {
    std::fprintf(stderr, "inference server: built without SQLite (Debian: libsqlite3-dev): no database\n");
    cfg.export_type = {"text"};
  }
#endif
#if !defined(NPUPROF_EXAMPLE_METRICS)
  if (cfg.metrics.enabled()) {
    std::fprintf(stderr, "inference server: built without prometheus-cpp (Debian: prometheus-cpp-dev): no metrics\n");
    cfg.metrics.listen.clear();
  }
#endif
  // Traces go under ./npuprof_traces/ unless NPUPROF_OUTPUT_DIR or the config file names
  // another directory.
  if (std::getenv("NPUPROF_OUTPUT_DIR") == nullptr && cfg.output_dir == ".") cfg.output_dir = "npuprof_traces";
  if (cfg.acl_library.empty()) cfg.acl_library = npuprof_sim_library_path();
  if (!cfg.flight.enabled) {
    cfg.flight.enabled = true;  // always on: keep the last 10 s, in at most 64 MiB
    cfg.flight.window_s = 10;
    cfg.flight.memory_mb = 64;
  }
  cfg.on_trace_ready = [](const std::filesystem::path& dir) {
    for (const auto& file : {dir / "trace_view.json", dir / "ASCEND_PROFILER_OUTPUT"}) {
      if (std::filesystem::exists(file)) std::printf("npuprof: trace written to %s\n", file.c_str());
    }
    std::fflush(stdout);
  };
  // Left running on purpose: the window is written when the process exits.
  auto* recorder = new npuprof::session{cfg};
  recorder->start();
  recorder->add_metadata("model", "demo-7b (simulated)");
  if (!recorder->metrics_address().empty()) {
    std::printf("npuprof: live metrics at http://%s/metrics\n", recorder->metrics_address().c_str());
  }
  std::printf("inference server %d: running %.1f s; kill -USR1 %d writes the last %.0f s\n",
              static_cast<int>(::getpid()), seconds, static_cast<int>(::getpid()), cfg.flight.window_s);

  aclrtStream stream = nullptr;
  aclrtCreateStream(&stream);
  npuprof::name_stream(stream, "model");

  request_queue incoming("queue_depth"), done("responses_pending");
  std::thread sched(scheduler, std::ref(incoming), std::ref(done), stream);
  std::thread resp(responder, std::ref(done), std::chrono::milliseconds(25));
  std::thread rx1(receiver, "receiver 1", std::ref(incoming), 1u);
  std::thread rx2(receiver, "receiver 2", std::ref(incoming), 2u);

  std::this_thread::sleep_for(std::chrono::duration<double>(seconds / 2));
  ::kill(::getpid(), SIGUSR1);  // as an operator would from a shell
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds / 2));

  accepting = false;
  rx1.join();
  rx2.join();
  incoming.close();
  sched.join();
  resp.join();
  aclrtDestroyStream(stream);
  std::printf("inference server: %d requests served\n", next_id.load());
  return 0;  // the flight recorder writes its window now
}
