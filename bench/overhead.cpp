// Marker overhead, as ratios to a floor measured in the same run: the floor
// of a timed range is two raw counter reads; of a mark, one.
//
//   meson setup build-release --buildtype=release && ninja -C build-release
//   build-release/bench/overhead
//
// Prints Google Benchmark's own lines, then one table: ns per operation and
// the ratio to the floor.
#include <npuprof/npuprof.hpp>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
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
  state.counters["dropped"] = static_cast<double>(npuprof::detail::state().threads.peek_drops());
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

void counter_sample(benchmark::State& state) {
  static const npuprof::registered_string<bench_domain> name{"depth"};
  std::int64_t v = 0;
  for (auto _ : state) npuprof::counter<bench_domain>(name, ++v);
  report_drops(state);
}

}  // namespace

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
  std::printf("\n%-34s %10s %12s\n", "npuprof overhead", "ns/op", "x floor");
  auto row = [&](const char* label, const std::string& key, double floor) {
    const double v = get(key);
    if (v == 0.0) return;
    std::printf("%-34s %10.2f %12.2f\n", label, v, floor > 0 ? v / floor : 0.0);
  };
  row("floor: two counter reads", "floor_two_reads", two);
  row("floor: one counter read", "floor_one_read", one);
  row("disabled: no session", "disabled_no_session", two);
  row("disabled: domain filtered", "disabled_filtered", two);
  row("disabled: compiled out", "disabled_compiled_out", two);
  row("mark (vs one read)", "mark_registered", one);
  row("scoped range, registered", "range_registered", two);
  row("scoped range, registered, 2 thr", "range_registered_2_threads", two);
  row("scoped range, copied 16 B", "range_copied_16", two);
  row("scoped range, copied 128 B", "range_copied_128", two);
  row("unique_range, registered", "range_unique", two);
  row("counter (vs one read)", "counter_sample", one);
  if (g_session != nullptr && g_session->running()) g_session->cancel();
  return 0;
}
