// Run-time filtering: the mstx switch, domain include/exclude, include wins,
// and filters that change while threads record.
#include "support.hpp"

#include <atomic>
#include <thread>

namespace {

struct kernels {
  static constexpr const char* name = "kernels";
};
struct comm {
  static constexpr const char* name = "comm";
};
struct debug {
  static constexpr const char* name = "debug";
};

void one_of_each() {
  npuprof::mark("default mark");
  npuprof::mark<kernels>("kernels mark");
  npuprof::mark<comm>("comm mark");
  npuprof::mark<debug>("debug mark");
  { npuprof::scoped_range<debug> r{"debug range"}; }
  npuprof::counter<debug>("debug counter", 1);
  npuprof::mark(npuprof::domain_by_name("dynamic"), "dynamic mark");
}

}  // namespace

TEST_CASE("domain exclude keeps every other domain") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.domain_exclude = {"debug", "dynamic"};
  auto t = test::record(cfg, one_of_each);
  CHECK(t.count("default mark") == 1);
  CHECK(t.count("kernels mark") == 1);
  CHECK(t.count("comm mark") == 1);
  CHECK(t.count("debug mark") == 0);
  CHECK(t.count("debug range") == 0);
  CHECK(t.count("debug counter") == 0);
  CHECK(t.count("dynamic mark") == 0);
}

TEST_CASE("domain include keeps only the domains named, default included only when named") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.domain_include = {"kernels", "dynamic"};
  auto t = test::record(cfg, one_of_each);
  CHECK(t.count("kernels mark") == 1);
  CHECK(t.count("dynamic mark") == 1);
  CHECK(t.count("default mark") == 0);
  CHECK(t.count("comm mark") == 0);
  CHECK(t.count("debug range") == 0);
}

TEST_CASE("include wins over exclude, with a warning") {
  test::temp_dir dir;
  test::scoped_env inc("NPUPROF_DOMAIN_INCLUDE", "comm");
  test::scoped_env exc("NPUPROF_DOMAIN_EXCLUDE", "comm,kernels");
  test::scoped_env cfgfile("NPUPROF_CONFIG", nullptr);
  auto cfg = npuprof::config::from_env();
  cfg.output_dir = dir.path.string();
  REQUIRE(cfg.warnings.size() == 1);
  CHECK(cfg.warnings[0].find("only mstx_domain_include takes effect") != std::string::npos);
  auto t = test::record(cfg, one_of_each);
  CHECK(t.count("comm mark") == 1);
  CHECK(t.count("kernels mark") == 0);
  CHECK(t.count("default mark") == 0);
}

TEST_CASE("the mstx switch turns every marker off, from config and from the environment") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.mstx = false;
  auto t = test::record(cfg, one_of_each);
  CHECK(t.phase("i").empty());
  CHECK(t.phase("X").empty());
  CHECK(t.phase("C").empty());

  test::scoped_env off("NPUPROF_MSTX", "off");
  test::scoped_env cfgfile("NPUPROF_CONFIG", nullptr);
  auto env_cfg = npuprof::config::from_env();
  CHECK(env_cfg.mstx == false);
}

TEST_CASE("the filter can be changed through the API while a session runs") {
  test::temp_dir dir;
  auto t = test::record(test::config_in(dir), [] {
    npuprof::mark<comm>("comm 1");
    npuprof::set_domain_exclude({"comm"});
    npuprof::mark<comm>("comm 2");
    npuprof::mark<kernels>("kernels 2");
    npuprof::set_domain_exclude({});
    npuprof::set_markers_enabled(false);
    npuprof::mark<kernels>("kernels 3");
    npuprof::set_markers_enabled(true);
    npuprof::set_domain_include({"kernels"});
    npuprof::mark<comm>("comm 4");
    npuprof::mark<kernels>("kernels 4");
  });
  CHECK(t.count("comm 1") == 1);
  CHECK(t.count("comm 2") == 0);
  CHECK(t.count("kernels 2") == 1);
  CHECK(t.count("kernels 3") == 0);
  CHECK(t.count("comm 4") == 0);
  CHECK(t.count("kernels 4") == 1);
}

TEST_CASE("a range that began recorded records its end after its domain is filtered out") {
  test::temp_dir dir;
  auto t = test::record(test::config_in(dir), [] {
    npuprof::range_id id = npuprof::range_start<comm>("id range");
    {
      npuprof::scoped_range<comm> scoped{"scoped copied"};
      NPUPROF_RANGE(comm, "scoped registered");
      npuprof::set_domain_exclude({"comm"});
      npuprof::range_end<comm>(id);
    }
    // Began while filtered: no begin, so no end either, even once allowed.
    npuprof::scoped_range<comm> late{"began filtered"};
    npuprof::set_domain_exclude({});
  });
  for (const char* n : {"id range", "scoped copied", "scoped registered"}) {
    const auto ev = t.named(n, "X");
    REQUIRE_MESSAGE(ev.size() == 1, n);
    CHECK_MESSAGE(!ev[0]["args"].contains("incomplete"), n);
  }
  CHECK(t.count("began filtered") == 0);
  CHECK(t.count_of("unmatched_range_ends") == 0);
  CHECK(t.count_of("open_ranges") == 0);
}

TEST_CASE("filters that change while several threads record leave a consistent trace") {
  test::temp_dir dir;
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> ranges{0};
  auto t = test::record(test::config_in(dir), [&] {
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i) {
      threads.emplace_back([&] {
        for (int i = 0; !done.load(); ++i) {
          if (i % 10 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
          NPUPROF_RANGE(kernels, "outer");
          npuprof::scoped_range<comm> r{"inner copied"};
          npuprof::unique_range<comm> u{"inner id"};
          npuprof::mark<kernels>("tick");
          ranges.fetch_add(1);
        }
      });
    }
    for (int flip = 0; flip < 200; ++flip) {
      if (flip % 2) {
        npuprof::set_domain_exclude({"comm"});
      } else {
        npuprof::set_domain_include({"comm"});
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      npuprof::set_domain_include({});
      npuprof::set_domain_exclude({});
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    done = true;
    for (auto& th : threads) th.join();
  });
  CHECK(ranges.load() > 0);
  CHECK(t.count("outer", "X") > 0);
  CHECK(t.count("inner copied", "X") > 0);
  // Every begin recorded found its end; nothing is left open or unmatched.
  REQUIRE(t.count_of("dropped_events") == 0);
  CHECK(t.count_of("unmatched_range_ends") == 0);
  CHECK(t.count_of("open_ranges") == 0);
  test::check_nesting(t);
}
