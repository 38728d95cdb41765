// Marker overhead, as ratios to a floor measured in the same run: the floor
// of a timed range is two raw counter reads; of a mark, one.
//
//   meson setup build-release --buildtype=release && ninja -C build-release
//   build-release/bench/overhead
//
// Prints Google Benchmark's own lines, then one table: ns per operation, the
// ratio to the floor (or to the row named), and the target. Peers are
// measured in the same binary when their headers were found at build time.
#include <npuprof/session.hpp>
#include <npuprof/trace_data.hpp>
#include <npuprof/backend/acl_backend.hpp>
#include <npuprof/engine/state.hpp>
#if defined(NPUPROF_BENCH_DATABASE)
#include <npuprof/database.hpp>
#endif
#if defined(NPUPROF_BENCH_METRICS)
#include <npuprof/metrics.hpp>
#endif

#include <benchmark/benchmark.h>

#if defined(NPUPROF_BENCH_NVTX3)
#include <nvtx3/nvtx3.hpp>
#endif
#if defined(NPUPROF_BENCH_LTTNG)
#include "lttng_peer.hpp"
#endif

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include "mstx_abi.h"
#include "simulated_acl.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

struct bench_domain {
  static constexpr const char* name = "bench";
};
struct filtered_domain {
  static constexpr const char* name = "filtered";
};
struct compiled_out {  // excluded below with the same switch users have
  static constexpr const char* name = "compiled_out";
};

npuprof::session* g_session = nullptr;

npuprof::config bench_config() {
  npuprof::config cfg;
  cfg.output_dir = "/tmp";
  cfg.backend = "host";                  // the device rows start their own session
  cfg.buffer_size_kb = 2 * 1024 * 1024;  // 2 GiB cap: no run fills it
  cfg.domain_exclude = {"filtered"};
  return cfg;
}

constexpr std::int64_t kIterations = 2'000'000;

// Each enabled benchmark starts from empty, warm buffers: the same number of
// events is recorded once and thrown away, so that the pool holds enough
// chunks, already paged in, as in a long-running program. Drops are reported
// so that a cost measured on the drop path would show.
template <class Body>
void start_warm(Body body) {
  if (g_session == nullptr) {
    g_session = new npuprof::session(bench_config());
    g_session->start();
  }
  g_session->clear();
  for (std::int64_t i = 0; i < kIterations; ++i) body();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the drainer refill
  g_session->clear();
}

void start_fresh(const benchmark::State&) {
  start_warm([] {
    static const npuprof::registered_string<bench_domain> name{"warm"};
    npuprof::scoped_range<bench_domain> r{name};
    npuprof::scoped_range<bench_domain> big{std::string(160, 'w')};
  });
}

void report_drops(benchmark::State& state) {
  std::uint64_t dropped = 0;
  for (const auto& [tid, n] : npuprof::detail::state().threads.peek_drops_by_thread()) dropped += n;
  state.counters["dropped"] = static_cast<double>(dropped);
}

void floor_two_reads(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(npuprof::raw_ticks());
    benchmark::DoNotOptimize(npuprof::raw_ticks());
  }
}

void floor_one_read(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(npuprof::raw_ticks());
}

void disabled_no_session(benchmark::State& state) {
  if (g_session != nullptr && g_session->running()) g_session->cancel();
  for (auto _ : state) {
    NPUPROF_RANGE(bench_domain, "range");
    benchmark::ClobberMemory();
  }
}

void disabled_filtered(benchmark::State& state) {
  for (auto _ : state) {
    NPUPROF_RANGE(filtered_domain, "range");
    benchmark::ClobberMemory();
  }
}

void disabled_compiled_out(benchmark::State& state) {
  static_assert(!npuprof::compiled_in<compiled_out>);
  for (auto _ : state) {
    NPUPROF_RANGE(compiled_out, "range");
    benchmark::ClobberMemory();
  }
}

void mark_registered(benchmark::State& state) {
  for (auto _ : state) NPUPROF_MARK(bench_domain, "mark");
  report_drops(state);
}

void range_registered(benchmark::State& state) {
  static const npuprof::registered_string<bench_domain> name{"range"};
  for (auto _ : state) {
    npuprof::scoped_range<bench_domain> r{name};
    benchmark::ClobberMemory();
  }
  report_drops(state);
}

void range_copied_16(benchmark::State& state) {
  const std::string text(16, 'm');
  for (auto _ : state) {
    npuprof::scoped_range<bench_domain> r{text};
    benchmark::ClobberMemory();
  }
  report_drops(state);
}

void range_copied_128(benchmark::State& state) {
  const std::string text(128, 'm');
  for (auto _ : state) {
    npuprof::scoped_range<bench_domain> r{text};
    benchmark::ClobberMemory();
  }
  report_drops(state);
}

void range_unique(benchmark::State& state) {
  static const npuprof::registered_string<bench_domain> name{"unique"};
  for (auto _ : state) {
    npuprof::unique_range<bench_domain> r{name};
    benchmark::ClobberMemory();
  }
  report_drops(state);
}

std::vector<npuprof::range_id> g_ids;

void range_start_only(benchmark::State& state) {
  static const npuprof::registered_string<bench_domain> name{"cross"};
  g_ids.assign(static_cast<std::size_t>(kIterations), 0);
  std::size_t i = 0;
  for (auto _ : state) g_ids[i++] = npuprof::range_start<bench_domain>(name);
  report_drops(state);
}

// The ranges were begun on another thread (in setup); this thread ends them.
void start_on_other_thread(const benchmark::State& s) {
  start_fresh(s);
  static const npuprof::registered_string<bench_domain> name{"cross"};
  g_ids.assign(static_cast<std::size_t>(kIterations), 0);
  std::thread([&] {
    for (auto& id : g_ids) id = npuprof::range_start<bench_domain>(name);
  }).join();
}

void range_end_other_thread(benchmark::State& state) {
  std::size_t i = 0;
  for (auto _ : state) npuprof::range_end<bench_domain>(g_ids[i++]);
  report_drops(state);
}

#if defined(NPUPROF_BENCH_NVTX3)
struct nvtx_bench_domain {
  static constexpr const char* name{"bench"};
};
struct nvtx_range_name {
  static constexpr const char* message{"range"};
};

void nvtx3_push_pop_no_tool(benchmark::State& state) {
  for (auto _ : state) {
    nvtxRangePushA("range");
    benchmark::ClobberMemory();
    nvtxRangePop();
  }
}

void nvtx3_scoped_registered_no_tool(benchmark::State& state) {
  for (auto _ : state) {
    nvtx3::scoped_range_in<nvtx_bench_domain> r{nvtx3::registered_string_in<nvtx_bench_domain>::get<nvtx_range_name>()};
    benchmark::ClobberMemory();
  }
}
#endif

#if defined(NPUPROF_BENCH_LTTNG)
// LTTng-UST: a range is two tracepoints, each with a registered name's
// number. The session (started for the active row only) records every event.
constexpr std::int64_t kLttngIterations = 500'000;  // one run fits the session's buffers
lttng_peer::session* g_lttng = nullptr;
bool g_lttng_active = false;
std::string g_lttng_why;
long g_lttng_discarded = -1;

void lttng_range_no_session(benchmark::State& state) {
  for (auto _ : state) {
    lttng_ust_tracepoint(npuprof_bench, range_begin, 1u);
    benchmark::ClobberMemory();
    lttng_ust_tracepoint(npuprof_bench, range_end, 1u);
  }
}

void start_lttng(const benchmark::State&) {
  if (g_lttng != nullptr) return;
  g_lttng = new lttng_peer::session;
  g_lttng_active = g_lttng->start(g_lttng_why);
}

void lttng_range_active(benchmark::State& state) {
  if (!g_lttng_active) {
    state.SkipWithError(g_lttng_why.c_str());
    return;
  }
  for (auto _ : state) {
    lttng_ust_tracepoint(npuprof_bench, range_begin, 1u);
    benchmark::ClobberMemory();
    lttng_ust_tracepoint(npuprof_bench, range_end, 1u);
  }
}

void stop_lttng() {
  if (g_lttng == nullptr) return;
  if (g_lttng_active) g_lttng_discarded = g_lttng->discarded();
  delete g_lttng;
  g_lttng = nullptr;
}
#endif

// mstx through the injection library, as an mstx-annotated program calls it,
// against the same marker through the C++ API. Both copy a 16-byte message.
struct mstx_tables {
  mstxFuncPointer core[MSTX_API_CORE_SIZE] = {};
  mstxFuncPointer domain[MSTX_API_DOMAIN_SIZE] = {};
  mstxFuncPointer* core_ptrs[MSTX_API_CORE_SIZE];
  mstxFuncPointer* domain_ptrs[MSTX_API_DOMAIN_SIZE];
  bool loaded = false;
};
mstx_tables g_mstx;

int mstx_get_table(int module, mstxFuncTable* out, unsigned* size) {
  if (module == MSTX_API_MODULE_CORE) {
    *out = g_mstx.core_ptrs;
    *size = MSTX_API_CORE_SIZE;
    return MSTX_SUCCESS;
  }
  if (module == MSTX_API_MODULE_CORE_DOMAIN) {
    *out = g_mstx.domain_ptrs;
    *size = MSTX_API_DOMAIN_SIZE;
    return MSTX_SUCCESS;
  }
  return MSTX_FAIL;
}

void load_mstx(const benchmark::State& s) {
  start_fresh(s);  // the session runs first, so the library records into it
  if (g_mstx.loaded) return;
  for (int i = 0; i < MSTX_API_CORE_SIZE; ++i) g_mstx.core_ptrs[i] = &g_mstx.core[i];
  for (int i = 0; i < MSTX_API_DOMAIN_SIZE; ++i) g_mstx.domain_ptrs[i] = &g_mstx.domain[i];
  void* lib = ::dlopen(NPUPROF_BENCH_MSTX_LIBRARY, RTLD_NOW);
  auto init = lib ? reinterpret_cast<InitInjectionMstx_t>(::dlsym(lib, "InitInjectionMstx")) : nullptr;
  g_mstx.loaded = init != nullptr && init(&mstx_get_table) == MSTX_SUCCESS;
}

const char* const k16 = "sixteen byte msg";

void mstx_range_16(benchmark::State& state) {
  if (!g_mstx.loaded) {
    state.SkipWithError("injection library not loaded");
    return;
  }
  auto start = reinterpret_cast<mstxRangeStartA_t>(g_mstx.core[MSTX_API_CORE_RANGE_START_A]);
  auto end = reinterpret_cast<mstxRangeEnd_t>(g_mstx.core[MSTX_API_CORE_RANGE_END]);
  for (auto _ : state) end(start(k16, nullptr));
  report_drops(state);
}

void cpp_range_16(benchmark::State& state) {
  for (auto _ : state) npuprof::range_end(npuprof::range_start(k16));
  report_drops(state);
}

void counter_sample(benchmark::State& state) {
  static const npuprof::registered_string<bench_domain> name{"depth"};
  std::int64_t v = 0;
  for (auto _ : state) npuprof::counter<bench_domain>(name, ++v);
  report_drops(state);
}

}  // namespace

// Device: a stream-tied range against the two runtime calls it cannot avoid
// (recording an event at its begin and at its end), on the simulated
// runtime. The device session replaces the host one for these last rows.
aclrtStream g_stream = nullptr;
constexpr std::int64_t kDeviceIterations = 100'000;

void start_device_session() {
  if (g_session != nullptr && g_session->running()) g_session->cancel();
  if (g_stream == nullptr) aclrtCreateStream(&g_stream);
  npuprof::config cfg = bench_config();
  cfg.acl_library = npuprof_sim_library_path();
  cfg.backend = "acl";
  cfg.device_events_per_stream = 2048;  // what 256 iterations take, with room to spare
  cfg.flush_interval_ms = 1;
  delete g_session;
  g_session = new npuprof::session(cfg);
  g_session->start();
  aclrtSynchronizeStream(g_stream);
}

void start_device(const benchmark::State&) { start_device_session(); }

// The simulated device executes events on a host thread that shares the two
// cores with the benchmark: let it catch up now and then, off the clock, in
// both rows alike, so that no event pool runs dry.
void device_catch_up() {
  aclrtSynchronizeStream(g_stream);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the resolver frees the events
}

void let_device_catch_up(benchmark::State& state, std::int64_t i) {
  if ((i & 255) != 255) return;
  state.PauseTiming();
  device_catch_up();
  state.ResumeTiming();
}

// Device parts of markers dropped for want of a free event since the session
// started; -1 without the backend.
double device_dropped() {
  std::string why;
  auto* b = npuprof::detail::acl_backend::open(npuprof_sim_library_path(), why);
  return b != nullptr ? b->describe()["device_events"]["dropped_pool_empty"].get<double>() : -1;
}

// What a bare-records row does besides the two records.
enum class besides {
  nothing,
  // A second thread reads each event's device time once the stream has
  // passed it, polling as often as the session's resolver does here: what
  // timing the events by hand costs the recording thread. Reading an event on
  // another core leaves its memory there, so recording it again has to fetch
  // it back.
  read_back,
  // The host clock is read before the first record and after the second, as
  // a host range around them does: the floor of a stream-tied range.
  clock_reads,
};

// Two bare records per iteration on `pairs` pairs of events in turn.
void bare_records(benchmark::State& state, std::size_t pairs, besides extra = besides::nothing) {
  const bool read_back = extra == besides::read_back;
  std::vector<aclrtEvent> ev(2 * pairs, nullptr);
  for (aclrtEvent& e : ev) aclrtCreateEventWithFlag(&e, ACL_EVENT_TIME_LINE);
  std::atomic<std::uint64_t> recorded{0};
  std::atomic<bool> done{false};
  std::thread reader([&] {
    std::uint64_t next = 0;
    for (bool last = !read_back; !last;) {
      last = done.load(std::memory_order_acquire);
      for (const std::uint64_t end = recorded.load(std::memory_order_acquire); next != end; ++next) {
        aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
        if (aclrtQueryEventStatus(ev[next % ev.size()], &status) != ACL_SUCCESS) break;
        if (status != ACL_EVENT_RECORDED_STATUS_COMPLETE) break;
        std::uint64_t us = 0;
        aclrtEventGetTimestamp(ev[next % ev.size()], &us);
        benchmark::DoNotOptimize(us);
      }
      if (!last) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::int64_t i = 0;
  for (auto _ : state) {
    const std::size_t k = static_cast<std::size_t>(i) % pairs * 2;
    if (extra == besides::clock_reads) {
      const std::uint64_t begin = npuprof::raw_ticks();
      aclrtRecordEvent(ev[k], g_stream);
      aclrtRecordEvent(ev[k + 1], g_stream);
      const std::uint64_t end = npuprof::raw_ticks();
      benchmark::DoNotOptimize(begin);
      benchmark::DoNotOptimize(end);
    } else {
      aclrtRecordEvent(ev[k], g_stream);
      aclrtRecordEvent(ev[k + 1], g_stream);
    }
    if (read_back) recorded.store(static_cast<std::uint64_t>(i + 1) * 2, std::memory_order_release);
    let_device_catch_up(state, i++);
  }
  aclrtSynchronizeStream(g_stream);
  done.store(true, std::memory_order_release);
  reader.join();
  for (aclrtEvent e : ev) aclrtDestroyEvent(e);
}

// The same two events each time.
void device_two_bare_records(benchmark::State& state) { bare_records(state, 1); }

// A different pair each time, as timing needs (an event recorded again
// before it was read loses its time): 1024 pairs, as many as the range's
// pool holds.
void device_two_bare_records_rotating(benchmark::State& state) { bare_records(state, 1024); }

// As the rotating row, with the events' times read back by a second thread.
void device_two_bare_records_timed(benchmark::State& state) { bare_records(state, 1024, besides::read_back); }

// As the rotating row, between two reads of the host clock.
void device_two_records_clock_reads(benchmark::State& state) { bare_records(state, 1024, besides::clock_reads); }

const npuprof::registered_string<bench_domain>& device_range_name() {
  static const npuprof::registered_string<bench_domain> name{"device range"};
  return name;
}

// As the host rows: the same number of ranges recorded once and thrown away
// first, so that the buffers are paged in, as in a long-running program.
void warm_device_range() {
  for (std::int64_t i = 0; i < kDeviceIterations; ++i) {
    { npuprof::scoped_range<bench_domain> r{device_range_name(), g_stream}; }
    if ((i & 255) == 255) device_catch_up();
  }
  aclrtSynchronizeStream(g_stream);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the drainer and resolver catch up
  g_session->clear();
}

void start_device_warm(const benchmark::State&) {
  start_device_session();
  warm_device_range();
}

void device_stream_range(benchmark::State& state) {
  const auto& name = device_range_name();
  const double dropped_before = device_dropped();  // the warm-up's are not this row's
  std::int64_t i = 0;
  for (auto _ : state) {
    {
      npuprof::scoped_range<bench_domain> r{name, g_stream};
      benchmark::ClobberMemory();
    }
    let_device_catch_up(state, i++);
  }
  aclrtSynchronizeStream(g_stream);
  state.counters["device_dropped"] = device_dropped() - dropped_before;
  report_drops(state);
}

#define NPUPROF_BENCH(fn) BENCHMARK(fn)->Iterations(kIterations)->Repetitions(5)->ReportAggregatesOnly(true)

NPUPROF_BENCH(floor_two_reads);
NPUPROF_BENCH(floor_one_read);
NPUPROF_BENCH(disabled_no_session);
NPUPROF_BENCH(disabled_compiled_out);
NPUPROF_BENCH(disabled_filtered)->Setup(start_fresh);
NPUPROF_BENCH(mark_registered)->Setup(start_fresh);
NPUPROF_BENCH(range_registered)->Setup(start_fresh);
NPUPROF_BENCH(range_registered)->Setup(start_fresh)->Threads(2)->Name("range_registered_2_threads");
NPUPROF_BENCH(range_copied_16)->Setup(start_fresh);
NPUPROF_BENCH(range_copied_128)->Setup(start_fresh);
NPUPROF_BENCH(range_unique)->Setup(start_fresh);
NPUPROF_BENCH(counter_sample)->Setup(start_fresh);
NPUPROF_BENCH(range_start_only)->Setup(start_fresh);
NPUPROF_BENCH(range_end_other_thread)->Setup(start_on_other_thread);
NPUPROF_BENCH(cpp_range_16)->Setup(start_fresh);
NPUPROF_BENCH(mstx_range_16)->Setup(load_mstx);
#if defined(NPUPROF_BENCH_NVTX3)
NPUPROF_BENCH(nvtx3_push_pop_no_tool);
NPUPROF_BENCH(nvtx3_scoped_registered_no_tool);
#endif
#if defined(NPUPROF_BENCH_LTTNG)
NPUPROF_BENCH(lttng_range_no_session);
BENCHMARK(lttng_range_active)
    ->Setup(start_lttng)
    ->Iterations(kLttngIterations)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
#endif
// Last: they replace the host session with a device one.
#define NPUPROF_DEVICE_BENCH(fn) \
  BENCHMARK(fn)->Setup(start_device)->Iterations(kDeviceIterations)->Repetitions(5)->ReportAggregatesOnly(true)
NPUPROF_DEVICE_BENCH(device_two_bare_records);
NPUPROF_DEVICE_BENCH(device_two_bare_records_rotating);
NPUPROF_DEVICE_BENCH(device_two_bare_records_timed);
NPUPROF_DEVICE_BENCH(device_two_records_clock_reads);
BENCHMARK(device_stream_range)
    ->Setup(start_device_warm)
    ->Iterations(kDeviceIterations)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

namespace {

// Collects each run's ns per operation to print the ratio table at the end.
class collecting_reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Aggregate || r.aggregate_name != "median") continue;
      // Per-thread cost: real time of the run divided by iterations of one thread.
      ns_[r.run_name.str()] = r.GetAdjustedRealTime() * static_cast<double>(r.threads);
    }
  }
  const std::map<std::string, double>& results() const { return ns_; }

 private:
  std::map<std::string, double> ns_;
};

}  // namespace

// The middle value (the upper one of an even count); 0 for none.
double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Device, interleaved: the stream-tied range and two bare records on 2048
// events in turn, measured batch by batch one after the other (in turns, so
// that neither always goes first). On a shared machine the cost of moving an
// event's line between cores changes by up to 2x from one minute to the next,
// which moves rows measured seconds apart more than the difference between
// them; two batches a few microseconds apart meet the same machine. Reports
// the median batch of each and the median of the batches' ratios.
void device_interleaved_rows() {
  constexpr int batches = 1000;
  constexpr int per_batch = 256;
  start_device_session();
  warm_device_range();
  const double dropped_before = device_dropped();
  std::vector<aclrtEvent> ev(2048, nullptr);  // as many as the range's pool holds
  for (aclrtEvent& e : ev) aclrtCreateEventWithFlag(&e, ACL_EVENT_TIME_LINE);
  const auto& name = device_range_name();
  std::size_t k = 0;
  auto records = [&] {
    for (int i = 0; i < per_batch; ++i, k = (k + 2) % ev.size()) {
      aclrtRecordEvent(ev[k], g_stream);
      aclrtRecordEvent(ev[k + 1], g_stream);
    }
  };
  auto ranges = [&] {
    for (int i = 0; i < per_batch; ++i) {
      npuprof::scoped_range<bench_domain> r{name, g_stream};
      benchmark::ClobberMemory();
    }
  };
  auto ns_per_op = [](auto&& body) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / per_batch;
  };
  std::vector<double> record_ns, range_ns, ratio;
  for (int b = 0; b < batches; ++b) {
    double rec = 0, rng = 0;
    if (b % 2 == 0) {
      rec = ns_per_op(records);
      rng = ns_per_op(ranges);
    } else {
      rng = ns_per_op(ranges);
      rec = ns_per_op(records);
    }
    record_ns.push_back(rec);
    range_ns.push_back(rng);
    ratio.push_back(rng / rec);
    device_catch_up();
  }
  aclrtSynchronizeStream(g_stream);
  for (aclrtEvent e : ev) aclrtDestroyEvent(e);
  const double rec = median(record_ns);
  std::printf("%-40s %9.2f %9.2f  %s\n", "device, interleaved: 2 bare records", rec, 1.0,
              "2048 events in turn; median of 1000 batches");
  const std::string note = "<= 1.2x (median of the batches' ratios); " +
                           std::to_string(static_cast<long long>(device_dropped() - dropped_before)) +
                           " device parts dropped";
  std::printf("%-40s %9.2f %9.2f  %s\n", "device, interleaved: stream-tied range", median(range_ns), median(ratio),
              note.c_str());
}

// Resident memory of this process in KiB, from /proc/self/status: "VmRSS"
// now, "VmHWM" its peak since the last reset_peak_rss(). 0 where unknown.
long long status_kib(const char* key) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  long long kib = 0;
  const std::size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, key, n) == 0 && line[n] == ':') kib = std::atoll(line + n + 1);
  }
  std::fclose(f);
  return kib;
}

bool reset_peak_rss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

// The floor for writing a trace: the same number of bytes written to the same
// file system with plain write() calls of 1 MiB, closed. Seconds.
double raw_write_seconds(const std::string& dir, std::uintmax_t bytes) {
  const std::string path = dir + "/raw_write_floor";
  const std::string block(1 << 20, 'x');
  const auto t0 = std::chrono::steady_clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return 0;
  for (std::uintmax_t left = bytes; left > 0;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uintmax_t>(left, block.size()));
    const ssize_t w = ::write(fd, block.data(), n);
    if (w <= 0) break;
    left -= static_cast<std::uintmax_t>(w);
  }
  ::close(fd);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::unlink(path.c_str());
  return secs;
}

std::uintmax_t file_bytes_under(const std::string& dir, const std::string& name) {
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.path().filename() == name) return e.file_size(ec);
  }
  return 0;
}

std::uintmax_t trace_file_bytes(const std::string& dir) { return file_bytes_under(dir, "trace_view.json"); }

// The database export (export_type "db") of the same recording as the JSON
// rows: events a second, and its bytes per range next to the JSON's; then
// of as many marks (each also a PYTORCH_API and a CONNECTION_IDS row).
void database_rows(double json_bytes_per_event) {
#if defined(NPUPROF_BENCH_DATABASE)
  constexpr int n = 1'000'000;
  npuprof::config cfg = bench_config();
  cfg.output_dir = "/tmp/npuprof-bench-database";
  cfg.export_type = {"db"};
  static const npuprof::registered_string<bench_domain> name{"exported range"};
  std::vector<double> rates, mark_rates;
  double bytes_per_event = 0;
  for (int run = 0; run < 3; ++run) {
    npuprof::session s{cfg};
    s.start();
    for (int i = 0; i < n; ++i) npuprof::mark<bench_domain>(name);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto t0 = std::chrono::steady_clock::now();
    s.stop();
    mark_rates.push_back(n / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1e6);
    std::error_code ec;
    std::filesystem::remove_all(cfg.output_dir, ec);
  }
  for (int run = 0; run < 3; ++run) {
    npuprof::session s{cfg};
    s.start();
    for (int i = 0; i < n; ++i) npuprof::scoped_range<bench_domain> r{name};
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the drainer settle: not export work
    const auto t0 = std::chrono::steady_clock::now();
    s.stop();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(n / secs / 1e6);
    bytes_per_event = static_cast<double>(file_bytes_under(cfg.output_dir, "ascend_pytorch_profiler.db")) / n;
    std::error_code ec;
    std::filesystem::remove_all(cfg.output_dir, ec);
  }
  std::printf("%-40s %9.2f %9s  %s\n", "export db: M events/s (median of 3)", median(rates), "",
              ">= 2 on one core (stop+write)");
  std::printf("%-40s %9.2f %9s  %s\n", "export db, marks: M events/s (median of 3)", median(mark_rates), "",
              "each mark also a PYTORCH_API and a CONNECTION_IDS row");
  std::printf("%-40s %9.2f %9.2f  %s\n", "export db: bytes per range", bytes_per_event,
              json_bytes_per_event > 0 ? json_bytes_per_event / bytes_per_event : 0.0,
              "ratio: the JSON's bytes per range to these");
#else
  (void)json_bytes_per_event;
  std::printf("%-40s %9s %9s  %s\n", "export db", "-", "-", "skipped: SQLite not found at build time");
#endif
}

// Export: how fast a stopped session writes trace_view.json, against the
// floor of writing as many bytes to the same file system, and how much memory
// stop() takes beyond the buffers it reads. The first export of a process and
// the later ones (median of three) are shown apart: the first meets memory
// the allocator has not handed out yet.
void export_rows() {
  constexpr int n = 2'000'000;
  constexpr int runs = 4;
  if (g_session != nullptr && g_session->running()) g_session->cancel();
  npuprof::config cfg = bench_config();
  cfg.output_dir = "/tmp/npuprof-bench-export";
  static const npuprof::registered_string<bench_domain> name{"exported range"};
  std::vector<double> rates, floor_rates, peak_ratios;
  double bytes_per_range = 0, file_bytes_per_event = 0;
  for (int run = 0; run < runs; ++run) {
    npuprof::session s{cfg};
    s.start();
    for (int i = 0; i < n; ++i) npuprof::scoped_range<bench_domain> r{name};
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the drainer settle: not export work
    const long long rss_before = status_kib("VmRSS");
    const bool peak_known = reset_peak_rss();
    const auto t0 = std::chrono::steady_clock::now();
    s.stop();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const long long peak = status_kib("VmHWM");
    const auto& d = s.data();
    const double events = static_cast<double>(d.events.size());
    rates.push_back(events / secs / 1e6);
    bytes_per_range = static_cast<double>(d.counts.buffer_bytes) / events;
    if (peak_known && rss_before > 0 && peak > 0) {
      peak_ratios.push_back(static_cast<double>(peak - rss_before) * 1024.0 /
                            static_cast<double>(d.counts.buffer_bytes));
    }
    const std::uintmax_t file_bytes = trace_file_bytes(cfg.output_dir);
    file_bytes_per_event = static_cast<double>(file_bytes) / events;
    const double floor_secs = raw_write_seconds(cfg.output_dir, file_bytes);
    if (floor_secs > 0) floor_rates.push_back(events / floor_secs / 1e6);
    std::error_code ec;
    std::filesystem::remove_all(cfg.output_dir, ec);
  }
  // The same floor into memory the machine has not written for a while: a
  // virtual machine may hand pages left free for a few seconds back to its
  // host (free page reporting), and the page cache then takes each one back
  // through the host, which can cost many times the write itself. The first
  // export of a process mostly meets such pages; the floor above, measured
  // right after an export, reuses the pages that export just freed.
  std::error_code ec;
  std::filesystem::create_directories(cfg.output_dir, ec);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  const double idle_secs = raw_write_seconds(cfg.output_dir, static_cast<std::uintmax_t>(file_bytes_per_event * n));
  std::filesystem::remove_all(cfg.output_dir, ec);
  const double later = median({rates.begin() + 1, rates.end()});
  const double floor = median(floor_rates);
  const std::string floor_note = "plain 1 MiB write()s of as many bytes (" +
                                 std::to_string(static_cast<int>(file_bytes_per_event)) + " B an event)";
  std::printf("%-40s %9.2f %9s  %s\n", "export: floor, raw write, M events/s", floor, "", floor_note.c_str());
  std::printf("%-40s %9.2f %9s  %s\n", "export: floor after 5 s idle, M events/s",
              idle_secs > 0 ? n / idle_secs / 1e6 : 0.0, "",
              "the same write, into memory left free for 5 s (see export_rows())");
  std::printf("%-40s %9.2f %9.2f  %s\n", "export: M events/s, first in the process", rates[0],
              floor > 0 ? rates[0] / floor : 0.0, ">= 10 on one core (stop+write); ratio to the floor");
  std::printf("%-40s %9.2f %9.2f  %s\n", "export: M events/s, later (median of 3)", later,
              floor > 0 ? later / floor : 0.0, ">= 10 on one core (stop+write); ratio to the floor");
  if (peak_ratios.empty()) {
    std::printf("%-40s %9s %9s  %s\n", "export: peak extra memory / buffer bytes", "-", "-",
                "not measured: /proc/self/clear_refs or VmHWM unavailable");
  } else {
    std::printf("%-40s %9.2f %9s  %s\n", "export: peak extra memory / buffer bytes", median(peak_ratios), "",
                "<= 0.5; peak resident memory during stop() less resident before, median of 4");
  }
  std::printf("%-40s %9.2f %9s  %s\n", "export: buffer bytes per scoped range", bytes_per_range, "", "<= 32");
  database_rows(file_bytes_per_event);
}

// Live metrics: recording with metrics on against off, in turns (the
// recording threads do not touch metrics: only the drainer's work could show
// here), and what the drainer spends per event to measure them.
void metrics_rows() {
#if defined(NPUPROF_BENCH_METRICS)
  if (g_session != nullptr && g_session->running()) g_session->cancel();
  constexpr int n = 1'000'000;
  static const npuprof::registered_string<bench_domain> name{"measured range"};
  std::vector<double> off_ns, on_ns;
  for (int round = 0; round < 6; ++round) {
    const bool on = round % 2 == 1;
    npuprof::config cfg = bench_config();
    if (on) cfg.metrics.listen = "127.0.0.1:0";
    npuprof::session s{cfg};
    s.start();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      npuprof::scoped_range<bench_domain> r{name};
      benchmark::ClobberMemory();
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
    (on ? on_ns : off_ns).push_back(ns);
    s.cancel();
  }
  const double off = median(off_ns), on = median(on_ns);
  std::printf("%-40s %9.2f %9s  %s\n", "metrics off: scoped range, registered", off, "", "ns, median of 3 sessions");
  std::printf("%-40s %9.2f %9.2f  %s\n", "metrics on: scoped range, registered", on, off > 0 ? on / off : 0.0,
              "~1.0x the off row, same run, in turns");

  // The drainer's side: records as the writer lays them out, 3 of 4 scoped
  // ranges with registered names (8 of them), 1 of 4 a copied 16-byte
  // message begun and ended by id; read as a flush reads them.
  namespace d = npuprof::detail;
  constexpr int ranges = 400'000;
  std::vector<std::uint64_t> ids;
  for (int k = 0; k < 8; ++k) ids.push_back(d::intern_string("kernel " + std::to_string(k)));
  const std::size_t words = static_cast<std::size_t>(ranges) * 6 + 64;
  std::vector<std::uint64_t> memory(words + sizeof(d::chunk) / 8 + 8);
  auto* c = d::chunk::create_in(memory.data(), (words + sizeof(d::chunk) / 8) * 8);
  std::uint64_t* p = c->data();
  std::uint64_t ticks = npuprof::raw_ticks();
  std::uint64_t events = 0;
  for (int i = 0; i < ranges; ++i, ticks += 3000) {
    if (i % 4 != 3) {
      *p++ = ticks;
      *p++ = d::make_tag(d::kind::complete, 0, ids[static_cast<std::size_t>(i) % ids.size()]);
      *p++ = ticks + 1500;
    } else {
      *p++ = ticks;
      *p++ = d::make_tag(d::kind::begin_copy, 0, 16);
      *p++ = static_cast<std::uint64_t>(i) + 1;
      std::memcpy(p, "request 00000000", 16);
      p += 2;
      *p++ = ticks + 1500;
      *p++ = d::make_tag(d::kind::end, 0, 0);
      *p++ = static_cast<std::uint64_t>(i) + 1;
    }
    ++events;
  }
  npuprof::metrics_endpoint settings;
  d::live_metrics m(settings);
  m.calibrate(0, 0.5);
  std::vector<double> per_event;
  for (int run = 0; run < 7; ++run) {
    c->metered = c->data();
    const auto t0 = std::chrono::steady_clock::now();
    m.read(*c, p);
    per_event.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
                        static_cast<double>(events));
  }
  std::printf("%-40s %9.2f %9s  %s\n", "metrics: drainer ns per range", median(per_event), "",
              "<= 30; 3/4 registered, 1/4 copied begin+end");
#else
  std::printf("%-40s %9s %9s  %s\n", "metrics", "-", "-", "skipped: prometheus-cpp not found at build time");
#endif
}

// Bursts at the default cap: a thread (or many) records far faster than
// the drainer refills the ready reserve. Below the cap nothing may drop.
void burst_rows() {
  if (g_session != nullptr && g_session->running()) g_session->cancel();
  npuprof::config cfg = bench_config();
  cfg.buffer_size_kb = npuprof::config{}.buffer_size_kb;
  cfg.output_dir = "/tmp/npuprof-bench-burst";
  auto burst = [&](const char* label, int threads, int each, std::size_t message_bytes) {
    npuprof::session s{cfg};
    s.start();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int k = 0; k < threads; ++k) {
      pool.emplace_back([&] {
        std::string message(message_bytes, 'm');
        for (int i = 0; i < each; ++i) {
          char digits[17];
          std::snprintf(digits, sizeof digits, "%016d", i);  // distinct messages, no NUL inside
          std::memcpy(message.data(), digits, std::min<std::size_t>(16, message_bytes));
          npuprof::scoped_range<bench_domain> r{message};
        }
      });
    }
    for (auto& t : pool) t.join();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s.stop();
    const auto& c = s.data().counts;
    const double made = static_cast<double>(threads) * each;
    char note[160];
    std::snprintf(note, sizeof note, "0 dropped (%llu of %.0f dropped, %.0f MiB of the cap written, %.1f M ranges/s)",
                  static_cast<unsigned long long>(c.dropped), made, static_cast<double>(c.buffer_bytes) / (1 << 20),
                  made / secs / 1e6);
    std::printf("%-40s %9llu %9s  %s\n", label, static_cast<unsigned long long>(c.dropped), "", note);
    std::error_code ec;
    std::filesystem::remove_all(cfg.output_dir, ec);
  };
  burst("burst: 1 thread x 100k, 255 B messages", 1, 100'000, 255);
  burst("burst: 1 thread x 100k, 16 B messages", 1, 100'000, 16);
  burst("burst: 64 threads x 3000, 16 B messages", 64, 3000, 16);
}

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  collecting_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto& ns = reporter.results();
  auto get = [&](const std::string& prefix) {
    for (auto& [name, v] : ns) {
      if (name == prefix || name.rfind(prefix + "/", 0) == 0) return v;
    }
    return 0.0;
  };
  const double two = get("floor_two_reads"), one = get("floor_one_read");
  std::printf("\n%-40s %9s %9s  %s\n", "npuprof overhead (median of 5 runs)", "ns/op", "ratio", "target");
  auto row = [&](const char* label, double v, double base, const char* target) {
    if (v == 0.0) return;
    std::printf("%-40s %9.2f %9.2f  %s\n", label, v, base > 0 ? v / base : 0.0, target);
  };
  auto row_key = [&](const char* label, const std::string& key, double base, const char* target) {
    row(label, get(key), base, target);
  };
  row_key("floor: two counter reads", "floor_two_reads", two, "ratios below are to this");
  row_key("floor: one counter read", "floor_one_read", one, "marks and counters: to this");
  row_key("disabled: no session", "disabled_no_session", two, "<= 1.5 ns");
  row_key("disabled: domain filtered at run time", "disabled_filtered", two, "<= 1.5 ns");
  row_key("disabled: compiled out", "disabled_compiled_out", two, "0 (loop alone)");
  row_key("mark, registered (x one read)", "mark_registered", one, "<= 1.5x");
  row_key("scoped range, registered", "range_registered", two, "<= 1.3x");
  row_key("scoped range, copied 16 B", "range_copied_16", two, "<= 1.8x");
  row_key("scoped range, copied 128 B", "range_copied_128", two, "");
  row_key("unique_range, registered", "range_unique", two, "");
  row("range_start here + range_end elsewhere", get("range_start_only") + get("range_end_other_thread"), two, "");
  row_key("counter, registered (x one read)", "counter_sample", one, "");
  row_key("C++ range_start/end, copied 16 B", "cpp_range_16", two, "");
  row_key("mstx via injection (x the C++ row)", "mstx_range_16", get("cpp_range_16"), "<= 1.5x");
  row_key("scoped range, 1 thread", "range_registered", get("range_registered"), "per-thread cost");
  row_key("scoped range, 2 threads at once", "range_registered_2_threads", get("range_registered"),
          "<= 1.2x the 1-thread cost");
#if defined(NPUPROF_BENCH_NVTX3)
  const double nvtx = get("nvtx3_push_pop_no_tool");
  row_key("peer NVTX3 push/pop, no tool", "nvtx3_push_pop_no_tool", two, "");
  row_key("peer NVTX3 scoped_range_in, no tool", "nvtx3_scoped_registered_no_tool", two, "");
  row("disabled npuprof vs NVTX3 push/pop", get("disabled_no_session"), nvtx, "<= 2x NVTX3");
  row("disabled npuprof vs NVTX3 scoped_range", get("disabled_no_session"), get("nvtx3_scoped_registered_no_tool"),
      "same shape: a scoped range, registered name");
#else
  std::printf("%-40s %9s %9s  %s\n", "peer NVTX3", "-", "-", "skipped: nvtx3 headers not found at build time");
#endif
#if defined(NPUPROF_BENCH_LTTNG)
  stop_lttng();
  row_key("peer LTTng-UST range, no session", "lttng_range_no_session", two, "two tracepoints, not enabled");
  if (g_lttng_active) {
    const std::string note = g_lttng_discarded < 0 ? std::string("discarded events unknown")
                                                   : std::to_string(g_lttng_discarded) + " events discarded";
    row_key("peer LTTng-UST range, session active", "lttng_range_active", two, note.c_str());
    row("LTTng-UST range / npuprof scoped range", get("lttng_range_active"), get("range_registered"), ">= 4x");
  } else {
    std::printf("%-40s %9s %9s  %s\n", "peer LTTng-UST range, session active", "-", "-",
                ("not measured: " + g_lttng_why).c_str());
  }
#else
  std::printf("%-40s %9s %9s  %s\n", "peer LTTng-UST", "-", "-", "skipped: lttng-ust not found at build time");
#endif
  row_key("device: 2 bare aclrtRecordEvent (sim.)", "device_two_bare_records", get("device_two_bare_records"),
          "simulated runtime, the same 2 events");
  row_key("device: 2 bare records, 2048 events", "device_two_bare_records_rotating", get("device_two_bare_records"),
          "distinct events, as timing needs");
  row_key("device: stream-tied range (x 2 records)", "device_stream_range", get("device_two_bare_records"), "<= 1.2x");
  row_key("device: stream-tied range (x rotating)", "device_stream_range", get("device_two_bare_records_rotating"), "");
  row_key("device: 2 bare records, times read back", "device_two_bare_records_timed", get("device_two_bare_records"),
          "by a second thread, as timing needs");
  row_key("device: stream-tied range (x timed)", "device_stream_range", get("device_two_bare_records_timed"), "");
  row_key("device: 2 records + 2 clock reads", "device_two_records_clock_reads", get("device_two_bare_records"),
          "what a stream-tied range cannot avoid");
  row_key("device: stream-tied range (x that floor)", "device_stream_range", get("device_two_records_clock_reads"), "");
  device_interleaved_rows();
  burst_rows();
  export_rows();
  metrics_rows();
  if (g_session != nullptr && g_session->running()) g_session->cancel();
  return 0;
}
