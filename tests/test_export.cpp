// trace_view.json and its strings: hostile messages always give valid JSON
// that reads back as the same text (invalid UTF-8 replaced by U+FFFD).
#include "support.hpp"

// What this suite checks from the inside.
#include <npuprof/export/trace_view.hpp>

#include <sys/stat.h>

#include <npuprof/export/json_escape.hpp>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>
#include <set>

namespace {

std::string escaped(std::string_view s) {
  fmt::memory_buffer out;
  npuprof::detail::append_json_string(out, s);
  return fmt::to_string(out);
}

std::string round_trip(std::string_view s) { return nlohmann::json::parse(escaped(s)).get<std::string>(); }

}  // namespace

TEST_CASE("quotes, backslashes and control characters are escaped") {
  CHECK(escaped("plain") == "\"plain\"");
  CHECK(escaped("a\"b\\c") == R"("a\"b\\c")");
  CHECK(escaped("line\nnext\ttab\r\b\f") == R"("line\nnext\ttab\r\b\f")");
  CHECK(escaped(std::string_view("\x01\x1f\0", 3)) == R"("\u0001\u001f\u0000")");
  for (int c = 0; c < 0x80; ++c) {
    const std::string s(1, static_cast<char>(c));
    CHECK(round_trip(s) == s);
  }
}

TEST_CASE("valid UTF-8 passes through and invalid bytes become U+FFFD") {
  CHECK(round_trip("héllo → 世界 🚀") == "héllo → 世界 🚀");
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(round_trip("a\xFF"
                   "b") == "a" + fffd + "b");
  CHECK(round_trip("\xC3") == fffd);                                   // truncated sequence
  CHECK(round_trip("\xC0\xAF") == fffd + fffd);                        // overlong
  CHECK(round_trip("\xED\xA0\x80") == fffd + fffd + fffd);             // surrogate
  CHECK(round_trip("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd);  // above U+10FFFF
}

TEST_CASE("hostile messages, thread names and domain names give a trace that parses back") {
  test::temp_dir dir;
  const std::vector<std::string> hostile = {"quote \" and backslash \\",
                                            "newline\nand\ttab",
                                            std::string("nul\0inside", 10),
                                            "\x7f\x01\x02",
                                            "=cmd|' /C calc'!A0",
                                            "</script>",
                                            "emoji 🚀 and 世界",
                                            "{\"not\": \"json\"}"};
  std::uint64_t tid = 0;
  auto t = test::record(test::config_in(dir), [&] {
    tid = npuprof::detail::os_thread_id();
    npuprof::name_thread("thread \"quoted\"\n");
    for (const auto& s : hostile) {
      npuprof::mark(s);
      npuprof::scoped_range r{npuprof::domain_by_name("dom\"ain"), s};
    }
    npuprof::mark("bad \xFF\xFE utf8");
  });
  for (const auto& s : hostile) {
    CHECK_MESSAGE(t.count(s, "i") == 1, s);
    CHECK_MESSAGE(t.count(s, "X") == 1, s);
    CHECK(t.named(s, "X")[0]["args"]["domain"] == "dom\"ain");
  }
  CHECK(t.count("bad \xEF\xBF\xBD\xEF\xBF\xBD utf8") == 1);
  CHECK(t.thread_name(tid) == "thread \"quoted\"\n");
}

TEST_CASE("the trace has process and thread metadata, sorted slices, and only Perfetto's metadata names") {
  test::temp_dir dir;
  auto t = test::record(test::config_in(dir), [] {
    npuprof::name_thread("main thread");
    for (int i = 0; i < 10; ++i) {
      npuprof::scoped_range<> outer{"outer"};
      npuprof::scoped_range<> inner{"inner"};
    }
  });
  for (const auto& m : t.phase("M")) {
    const std::string name = m["name"];
    CHECK_MESSAGE((name == "process_name" || name == "thread_name" || name == "process_sort_index" ||
                   name == "thread_sort_index"),
                  name);
  }
  CHECK(t.named("process_name", "M").size() == 1);
  CHECK(test::check_nesting(t) == 20);
}

namespace {
struct long_names {
  static constexpr const char* name = "long_names";
};
}  // namespace

TEST_CASE("long registered names and domain names, escaped, in slices and counters, parse back whole") {
  test::temp_dir dir;
  std::string long_name(20000, 'n');
  for (std::size_t i = 0; i < long_name.size(); i += 7) long_name[i] = '"';  // each one escaped: longer still
  const std::string long_domain = "dom" + std::string(3000, '\\');
  static const npuprof::registered_string<long_names> reg{long_name};
  auto t = test::record(test::config_in(dir), [&] {
    { npuprof::scoped_range<long_names> r{reg}; }
    npuprof::counter<long_names>(reg, 42);
    { npuprof::scoped_range r{npuprof::domain_by_name(long_domain), reg}; }
  });
  CHECK(t.count(long_name, "X") == 2);
  const auto c = t.named(long_name, "C");
  REQUIRE(c.size() == 1);
  CHECK(c[0]["args"][long_name] == 42);
  CHECK(t.named(long_name, "X").size() == 2);
  CHECK(t.where([&](const test::json& e) { return e["ph"] == "X" && e["cat"] == long_domain; }).size() == 1);
}

namespace {
struct slices {
  npuprof::trace_data data;
  slices() {
    data.pid = 7;
    data.strings = {"parent", "first child", "last child", "next"};
    data.domains = {"default"};
  }
  void add(std::uint32_t name, std::uint32_t tid, std::int64_t ts, std::int64_t dur) {
    npuprof::trace_event e;
    e.name = name;
    e.tid = e.end_tid = tid;
    e.ts = ts;
    e.dur = dur;
    data.events.push_back(e);
  }
  // A parent with a child that begins with it and one that ends with it.
  void family(std::uint32_t tid, std::int64_t ts, std::int64_t dur, std::int64_t child) {
    add(0, tid, ts, dur);
    add(1, tid, ts, child);
    add(2, tid, ts + dur - child, child);
  }
};

// Writes the slices of `s` (added in the order they are written: by thread,
// then by start) and checks them as a viewer reads them.
void check_as_read(const slices& s) {
  const npuprof::trace_data& data = s.data;
  test::temp_dir dir;
  npuprof::detail::write_trace_view(data, (dir.path / "trace_view.json").string());
  test::trace t;
  t.events = test::read_json(dir.path / "trace_view.json");
  REQUIRE(t.phase("X").size() == data.events.size());
  CHECK(test::float64_nesting_violations(t) == 0);
  // Every start is written to the nanosecond (read from the text: a double
  // holds no nanoseconds at the larger magnitude).
  const std::string text = test::read_text(dir.path / "trace_view.json");
  std::size_t starts = 0;
  for (std::size_t at_text = text.find("\"ts\":"); at_text != std::string::npos;
       at_text = text.find("\"ts\":", at_text + 1)) {
    const std::size_t from = at_text + 5, point = text.find('.', from);
    REQUIRE(point != std::string::npos);
    const std::int64_t written =
        std::stoll(text.substr(from, point - from)) * 1000 + std::stoll(text.substr(point + 1, 3));
    REQUIRE(starts < data.events.size());
    CHECK(written == data.events[starts++].ts);
  }
  CHECK(starts == data.events.size());
  // The durations still read as what was recorded: to the nanosecond, or,
  // where a double holds no nanoseconds at the end's magnitude, within what
  // landing on the end as read takes (an ulp and a half of it).
  std::size_t k = 0;
  for (const auto& e : t.phase("X")) {
    const npuprof::trace_event& recorded = data.events[k++];
    const double end_us = static_cast<double>(recorded.ts + recorded.dur) / 1000.0;
    const double ulp_ns = (std::nextafter(end_us, HUGE_VAL) - end_us) * 1000.0;
    CHECK(static_cast<double>(std::llabs(test::to_ns(e["dur"]) - recorded.dur)) <= 1.5 * ulp_ns + 0.5);
  }
}

// Back-to-back families on one thread from `start` ns on.
void check_float64_nesting(std::int64_t start) {
  slices s;
  std::mt19937_64 random(42);
  std::int64_t at = start;
  for (int i = 0; i < 5000; ++i) {
    const auto dur = static_cast<std::int64_t>(3 + random() % 5'000'000);
    s.family(11, at, dur, 1 + static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(dur / 2)));
    at += dur;  // the next parent begins where this one ends
  }
  check_as_read(s);
}
}  // namespace

TEST_CASE("slices nest when a viewer adds ts and dur as float64, at absolute timestamps") {
  // At the magnitudes a steady clock gives: a machine up for hours, and one
  // up for months, whose nanoseconds no longer fit a double's 53 bits.
  SUBCASE("just started") { check_float64_nesting(123); }
  SUBCASE("up for hours") { check_float64_nesting(9'912'345'678'901); }
  SUBCASE("up for months") { check_float64_nesting(12'345'678'912'345'671); }
  SUBCASE("ranges lasting minutes, begun seconds after boot") {
    // A slice that ends past twice its start: its end less its start, as
    // read, is no longer exact in float64. Each family on its own thread,
    // followed by a slice that begins where its parent ends.
    slices s;
    std::mt19937_64 random(7);
    for (std::uint32_t i = 0; i < 2000; ++i) {
      const std::int64_t ts =
          i == 0 ? 60'558'391'815 : 1'000'000'000 + static_cast<std::int64_t>(random() % 120'000'000'000);
      const std::int64_t dur =
          i == 0 ? 551'115'688'266 : 1'000'000'000 + static_cast<std::int64_t>(random() % 900'000'000'000);
      s.family(1000 + i, ts, dur, 1 + static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(dur / 2)));
      s.add(3, 1000 + i, ts + dur, 1000);
    }
    check_as_read(s);
  }
  SUBCASE("ranges lasting months, ending where a double holds no nanoseconds") {
    // Parents whose end no duration lands on, each with a child that ends
    // one nanosecond earlier (which reads as the same double as the end)
    // and a slice that begins at the end.
    slices s;
    const std::int64_t parents[][2] = {{1'614'816'023'661'378, 11'400'000'806'957'436},
                                       {1'993'247'529'028'337, 11'400'000'436'529'217},
                                       {1'226'691'005'915'755, 11'400'000'491'360'448},
                                       {1'987'691'755'805'624, 11'400'000'832'394'604}};
    std::uint32_t tid = 100;
    for (const auto& p : parents) {
      const std::int64_t ts = p[0], end = p[1];
      s.add(0, tid, ts, end - ts);
      s.add(1, tid, end - 5000, 4999);
      s.add(3, tid, end, 1000);
      ++tid;
    }
    check_as_read(s);
  }
}

namespace {
struct windows {
  static constexpr const char* name = "windows";
};

std::map<std::string, std::size_t> slices_by_name(const test::trace& t, std::uint64_t tid) {
  std::map<std::string, std::size_t> n;
  for (const test::json& e : t.events) {
    if (e["ph"] == "X" && e["tid"] == tid) ++n[e["name"].get<std::string>()];
  }
  return n;
}
}  // namespace

// A trace is written a window of events at a time; a scoped range is
// recorded when it ends, after the ranges it holds, so the ranges holding
// many others arrive windows after their children and must still be
// written first.
TEST_CASE("slices spanning many export windows are written sorted and nested, and data() holds the same events") {
  test::temp_dir dir;
  static const npuprof::registered_string<windows> outer{"outer"}, middle{"middle"}, leaf{"leaf"};
  constexpr int middles = 6, leaves = 25'000;  // 150,000 leaves: more than two windows
  npuprof::session s{test::config_in(dir)};
  s.start();
  const auto main_tid = npuprof::detail::os_thread_id();
  {
    npuprof::scoped_range<windows> o{outer};
    for (int m = 0; m < middles; ++m) {
      npuprof::scoped_range<windows> r{middle};
      for (int l = 0; l < leaves; ++l) npuprof::scoped_range<windows> x{leaf};
      npuprof::mark<windows>("between middles");
      npuprof::counter<windows>("middles done", m + 1);
    }
  }
  std::uint32_t other_tid = 0;
  std::thread([&] {  // copied messages: ranges begun with an id, nested
    other_tid = npuprof::detail::os_thread_id();
    for (int i = 0; i < 1000; ++i) {
      npuprof::scoped_range<windows> a{std::string("copied outer ") + std::to_string(i % 3)};
      npuprof::scoped_range<windows> b{std::string("copied inner")};
    }
  })
      .join();
  const std::filesystem::path out = s.stop();
  const test::trace t = test::load(out);
  CHECK(test::check_nesting(t) == 1 + middles + middles * leaves + 2000);
  // The file system's room asked for ahead while writing is given back: the
  // trace takes on disk about the bytes it holds.
  struct stat st {};
  REQUIRE(::stat((out / "trace_view.json").c_str(), &st) == 0);
  CHECK(st.st_size > 8 << 20);  // large enough to have asked for room ahead
  CHECK(static_cast<long long>(st.st_blocks) * 512 <= static_cast<long long>(st.st_size) + (1 << 20));
  CHECK(test::float64_nesting_violations(t) == 0);
  const auto main_slices = slices_by_name(t, main_tid);
  CHECK(main_slices.at("outer") == 1);
  CHECK(main_slices.at("middle") == middles);
  CHECK(main_slices.at("leaf") == static_cast<std::size_t>(middles * leaves));
  CHECK(t.count("between middles", "i") == middles);
  CHECK(t.count("middles done", "C") == middles);
  CHECK(slices_by_name(t, other_tid).at("copied inner") == 1000);
  // The first slice of the thread is the one that holds all others.
  for (const test::json& e : t.events) {
    if (e["ph"] != "X" || e["tid"] != main_tid) continue;
    CHECK(e["name"] == "outer");
    break;
  }
  CHECK(t.meta["session"]["events"] ==
        t.where([](const test::json& e) { return e["ph"] == "X" || e["ph"] == "i" || e["ph"] == "C"; }).size());

  // data() decodes the same records when asked, after the trace was written.
  const npuprof::trace_data& d = s.data();
  std::map<std::string, std::size_t> decoded;
  std::int64_t outer_dur = 0;
  for (const npuprof::trace_event& e : d.events) {
    if (e.what != npuprof::trace_event::type::slice) continue;
    ++decoded[std::string(d.name_of(e))];
    if (d.name_of(e) == "outer") outer_dur = e.dur;
  }
  CHECK(decoded["leaf"] == static_cast<std::size_t>(middles * leaves));
  CHECK(decoded["middle"] == middles);
  CHECK(decoded["copied inner"] == 1000);
  CHECK(d.events.size() == t.meta["session"]["events"].get<std::size_t>());
  const auto written_outer = t.named("outer", "X");
  REQUIRE(written_outer.size() == 1);
  CHECK(std::llabs(test::to_ns(written_outer[0]["dur"]) - outer_dur) <= 1);
}

// After stop() the session keeps its records for data() and write_to(), out
// of the pool: a session started meanwhile has its whole memory cap.
TEST_CASE("a stopped session's records do not take the memory cap of the next session") {
  test::temp_dir dir;
  npuprof::config cfg = test::config_in(dir);
  cfg.buffer_size_kb = 4096;
  static const npuprof::registered_string<windows> name{"ranged"};
  constexpr int n = 100'000;  // 2.4 MB of records: more than half the cap
  auto record = [&] {
    for (int i = 0; i < n; ++i) {
      npuprof::scoped_range<windows> r{name};
      if (i % 1000 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));  // let the drainer keep up
    }
  };
  npuprof::session first{cfg};
  first.start();
  record();
  const test::trace a = test::load(first.stop());
  npuprof::session second{cfg};
  second.start();
  record();
  const test::trace b = test::load(second.stop());
  CHECK(a.count_of("dropped_events") == 0);
  CHECK(b.count_of("dropped_events") == 0);
  CHECK(a.count("ranged", "X") == static_cast<std::size_t>(n));
  CHECK(b.count("ranged", "X") == static_cast<std::size_t>(n));
  // The first session's records are still there, and written again whole.
  std::size_t kept = 0;
  for (const npuprof::trace_event& e : first.data().events) kept += first.data().name_of(e) == "ranged";
  CHECK(kept == static_cast<std::size_t>(n));
  test::temp_dir again;
  CHECK(test::load(first.write_to(again.path.string())).count("ranged", "X") == static_cast<std::size_t>(n));
}

// A scoped range ended out of its scope's order (an object moved, or held
// by an optional reset early) overlaps its neighbour without nesting: the
// later one goes to another track and is counted, on a thread written a
// window at a time and on one written whole alike.
TEST_CASE("scoped ranges ended out of scope order are drawn on another track and counted") {
  test::temp_dir dir;
  static const npuprof::registered_string<windows> first{"first"}, second{"second"}, leaf{"leaf"};
  constexpr int pairs = 3000, leaves = 10'000;  // past one export window
  auto pause = [] {                             // so that no two of the times below fall in one clock tick
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(1);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  auto record = [&] {
    for (int i = 0; i < pairs; ++i) {
      std::optional<npuprof::scoped_range<windows>> a{std::in_place, first};
      pause();
      npuprof::scoped_range<windows> b{second};
      pause();
      a.reset();  // "first" ends inside "second"
      pause();
    }
    for (int i = 0; i < leaves; ++i) npuprof::scoped_range<windows> x{leaf};
  };
  npuprof::session s{test::config_in(dir)};
  s.start();
  const auto main_tid = npuprof::detail::os_thread_id();
  record();
  std::uint32_t whole_tid = 0;
  std::thread([&] {  // a range begun with an id: the thread is written whole
    whole_tid = npuprof::detail::os_thread_id();
    const npuprof::range_id id = npuprof::range_start<windows>("with an id");
    record();
    npuprof::range_end(id);
  })
      .join();
  const test::trace t = test::load(s.stop());
  CHECK(test::check_nesting(t) == 2 * (2 * pairs + leaves) + 1);
  CHECK(t.count_of("overlapping_ranges") == 2 * pairs);
  for (const auto tid : {main_tid, whole_tid}) {
    const auto on_thread = slices_by_name(t, tid);
    CHECK(on_thread.at("first") == pairs);  // each began first: it stays
    CHECK(on_thread.count("second") == 0);
    CHECK(on_thread.at("leaf") == leaves);
  }
  CHECK(t.count("second", "X") == 2 * pairs);
}

// A backlog of requests, each ended after the next one began: every range
// overlaps all the others, so each needs a track of its own. Placing them
// must not try every track for every range.
TEST_CASE("a backlog of thousands of overlapping ranges is drawn on as many tracks, each nested") {
  test::temp_dir dir;
  constexpr int n = 20'000;
  npuprof::session s{test::config_in(dir)};
  s.start();
  std::vector<npuprof::range_id> ids;
  ids.reserve(n);
  for (int i = 0; i < n; ++i) ids.push_back(npuprof::range_start<windows>("request"));
  for (const npuprof::range_id id : ids) npuprof::range_end(id);  // first in, first out
  { NPUPROF_RANGE(windows, "after the backlog"); }
  const test::trace t = test::load(s.stop());
  CHECK(test::check_nesting(t) == n + 1);
  std::set<std::uint64_t> tracks;
  for (const auto& e : t.named("request", "X")) tracks.insert(e["tid"].get<std::uint64_t>());
  CHECK(tracks.size() > n / 2);                  // about one each (ranges that end in one clock tick nest)
  CHECK(t.count_of("overlapping_ranges") == 0);  // ranges with ids may overlap
}
