// range_summary.csv: statistics recomputed from the trace itself, sorting,
// and cells that spreadsheets would run as formulas.
#include "support.hpp"

// What this suite checks from the inside.
#include <npuprof/export/summary.hpp>

#include <chrono>
#include <sstream>
#include <set>
#include <thread>

namespace {

// range_summary.csv of a decoded trace, as the writer makes it.
std::string render_summary(const npuprof::trace_data& d) {
  npuprof::detail::summary_builder b;
  b.add(d.events, d.device_events);
  return b.render(d);
}

using test::json;

struct kernels {
  static constexpr const char* name = "kernels";
};

/// Rows of an RFC 4180 CSV file.
std::vector<std::vector<std::string>> read_csv(const test::fs::path& file) {
  std::ifstream in(file);
  REQUIRE(in.good());
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::vector<std::string>> rows(1);
  std::string cell;
  bool quoted = false, was_quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = was_quoted = true;
    } else if (c == ',') {
      rows.back().push_back(cell);
      cell.clear();
    } else if (c == '\n') {
      rows.back().push_back(cell);
      cell.clear();
      rows.emplace_back();
    } else {
      cell += c;
    }
  }
  CHECK(!quoted);
  CHECK(was_quoted);
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

void sleep_us(int us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

}  // namespace

TEST_CASE("the summary matches statistics recomputed from the trace") {
  test::temp_dir dir;
  auto t = test::record(test::config_in(dir), [] {
    for (int i = 1; i <= 20; ++i) {
      npuprof::scoped_range<kernels> r{"gemm"};
      sleep_us(20 * i);
    }
    for (int i = 0; i < 3; ++i) {
      npuprof::scoped_range<> r{std::string("allreduce")};
      sleep_us(500);
    }
    npuprof::mark("not a range");
  });
  const auto rows = read_csv(t.dir / "range_summary.csv");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0] == std::vector<std::string>{"domain", "name", "where", "count", "total_us", "mean_us", "min_us",
                                            "max_us", "p50_us", "p90_us", "p99_us"});
  std::map<std::string, std::vector<std::string>> by_name;
  for (std::size_t i = 1; i < rows.size(); ++i) by_name[rows[i][1]] = rows[i];
  // Sorted by total, as recomputed from the trace (gemm sleeps 4.2 ms in all,
  // allreduce 1.5 ms, but a crowded machine may stretch either).
  auto total_of = [&](const std::string& name) {
    double total = 0;
    for (const json& e : t.named(name, "X")) total += e["dur"].get<double>();
    return total;
  };
  const bool gemm_first = total_of("gemm") >= total_of("allreduce");
  CHECK(rows[1][1] == (gemm_first ? "gemm" : "allreduce"));
  CHECK(std::stod(rows[1][4]) >= std::stod(rows[2][4]));

  for (const std::string name : {"gemm", "allreduce"}) {
    CAPTURE(name);
    std::vector<double> durs;
    std::string domain;
    for (const json& e : t.named(name, "X")) {
      durs.push_back(e["dur"].get<double>());
      domain = e["args"]["domain"];
    }
    std::sort(durs.begin(), durs.end());
    const auto& row = by_name.at(name);
    double total = 0;
    for (double d : durs) total += d;
    auto nearest_rank = [&](double p) { return durs[static_cast<std::size_t>(std::ceil(p / 100 * durs.size())) - 1]; };
    CHECK(row[0] == domain);
    CHECK(row[2] == "host");
    CHECK(std::stoul(row[3]) == durs.size());
    CHECK(std::abs(std::stod(row[4]) - total) <= 0.001 * (durs.size() + 1));
    CHECK(std::abs(std::stod(row[5]) - total / durs.size()) < 0.01);
    CHECK(std::abs(std::stod(row[6]) - durs.front()) < 0.0015);
    CHECK(std::abs(std::stod(row[7]) - durs.back()) < 0.0015);
    CHECK(std::abs(std::stod(row[8]) - nearest_rank(50)) < 0.0015);
    CHECK(std::abs(std::stod(row[9]) - nearest_rank(90)) < 0.0015);
    CHECK(std::abs(std::stod(row[10]) - nearest_rank(99)) < 0.0015);
  }
  // The longest gemm slept 400 us of the steady clock; the trace's counter is calibrated against
  // that clock, so it may read a few nanoseconds short (seen under an emulated CPU).
  CHECK(std::stod(by_name.at("gemm")[7]) >= 400.0 * 0.999);
}

TEST_CASE("summary cells that a spreadsheet would run are neutralised and parse back") {
  test::temp_dir dir;
  const std::vector<std::string> names = {"=HYPERLINK(\"http://x\")", "+1", "-cmd", "@SUM(A1)", "a \"quoted\", name"};
  auto t = test::record(test::config_in(dir), [&] {
    for (const std::string& n : names) npuprof::scoped_range<> r{n};
  });
  const auto rows = read_csv(t.dir / "range_summary.csv");
  REQUIRE(rows.size() == names.size() + 1);
  std::set<std::string> seen;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    REQUIRE(rows[i].size() == 11);
    seen.insert(rows[i][1]);
  }
  CHECK(seen.count("'=HYPERLINK(\"http://x\")") == 1);
  CHECK(seen.count("'+1") == 1);
  CHECK(seen.count("'-cmd") == 1);
  CHECK(seen.count("'@SUM(A1)") == 1);
  CHECK(seen.count("a \"quoted\", name") == 1);
}

TEST_CASE("summary names and domains are valid UTF-8, spelled as the trace spells them") {
  test::temp_dir dir;
  const std::string name = "bad \xff byte, cut \xc3";
  const std::string domain =
      "dom\xfe\xc0"
      "ain";
  auto t = test::record(test::config_in(dir), [&] {
    npuprof::scoped_range<> a{name};
    npuprof::scoped_range b{npuprof::domain_by_name(domain), "in the odd domain"};
  });
  const std::string text = test::read_text(t.dir / "range_summary.csv");
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    CHECK_MESSAGE((byte < 0xc0 || byte == 0xef), "a byte that starts no valid sequence here: " << int{byte});
  }
  const auto rows = read_csv(t.dir / "range_summary.csv");
  std::set<std::string> names, domains;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    REQUIRE(rows[i].size() == 11);
    domains.insert(rows[i][0]);
    names.insert(rows[i][1]);
  }
  const auto slices = t.phase("X");
  REQUIRE(slices.size() == 2);
  for (const json& e : slices) {
    CHECK(names.count(e["name"].get<std::string>()) == 1);
    CHECK(domains.count(e["args"]["domain"].get<std::string>()) == 1);
  }
  CHECK(names.count("bad \xef\xbf\xbd byte, cut \xef\xbf\xbd") == 1);
}

TEST_CASE("durations longer than 4.3 s are summed and ranked with the short ones") {
  // Short durations are kept in four bytes, longer ones apart: the
  // statistics must not see the difference.
  npuprof::trace_data d;
  d.strings = {"", "mixed"};
  d.domains = {"default"};
  const std::vector<std::int64_t> durs = {5'000'000'000, 1'000,         3'000,         9'000'000'000,
                                          2'000,         4'294'967'295, 4'294'967'296, 7};
  for (std::int64_t dur : durs) {
    npuprof::trace_event e;
    e.name = 1;
    e.dur = dur;
    d.events.push_back(e);
  }
  std::istringstream csv(render_summary(d));
  std::string header, row;
  std::getline(csv, header);
  std::getline(csv, row);
  std::vector<std::string> cells;
  std::stringstream split(row);
  for (std::string cell; std::getline(split, cell, ',');) cells.push_back(cell);
  REQUIRE(cells.size() == 11);
  std::vector<std::int64_t> sorted = durs;
  std::sort(sorted.begin(), sorted.end());
  std::int64_t total = 0;
  for (std::int64_t v : durs) total += v;
  auto us = [](std::int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1000.0); };
  auto rank = [&](double p) { return sorted[static_cast<std::size_t>(std::ceil(p / 100 * sorted.size())) - 1]; };
  CHECK(cells[3] == std::to_string(durs.size()));
  CHECK(cells[4] == us(total));
  CHECK(cells[6] == us(sorted.front()));
  CHECK(cells[7] == us(sorted.back()));
  CHECK(cells[8] == us(rank(50)));
  CHECK(cells[9] == us(rank(90)));
  CHECK(cells[10] == us(rank(99)));
}
