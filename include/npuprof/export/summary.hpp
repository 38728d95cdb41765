// range_summary.csv: per domain and range name, how often and how long, on
// the host and (for stream-tied ranges) on the device; sorted by total time.
#pragma once

#include "../marker/abi.hpp"
#include "../marker/platform.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "../trace_data.hpp"
#include "json_escape.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// A CSV cell: valid UTF-8 as trace_view.json spells it (each byte that
/// starts no valid sequence is U+FFFD), quoted, quotes doubled, and text
/// that a spreadsheet would run as a formula (starting with =, +, -, @, tab
/// or carriage return) prefixed with a single quote.
inline std::string csv_cell(std::string_view raw) {
  const std::string text = valid_utf8(raw);
  std::string out = "\"";
  if (!text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos) out += '\'';
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

/// Values in blocks that double from 64 to 16 Ki values: adding one is a
/// store and a compare, growing never copies what is there, and a group of
/// a few values (one of thousands of names) takes a few hundred bytes.
template <class T>
class blocks {
 public:
  void push_back(T v) {
    if (next_ == end_) grow();
    *next_++ = v;
  }
  std::size_t size() const noexcept {
    return full_ + (blocks_.empty() ? 0 : static_cast<std::size_t>(next_ - blocks_.back().get()));
  }
  /// Moves every value into one array, letting go of each block as it goes
  /// (so the values are held about once, not twice).
  std::vector<T> take_all() {
    std::vector<T> all;
    all.reserve(size());
    std::size_t n = first_block;
    for (std::size_t i = 0; i < blocks_.size(); ++i, n = std::min(2 * n, max_block)) {
      const T* b = blocks_[i].get();
      all.insert(all.end(), b, i + 1 < blocks_.size() ? b + n : next_);
      blocks_[i].reset();
    }
    blocks_.clear();
    next_ = end_ = nullptr;
    full_ = 0;
    return all;
  }

 private:
  static constexpr std::size_t first_block = 64, max_block = 16384;
  NPUPROF_COLD void grow() {
    std::size_t n = first_block;
    if (!blocks_.empty()) {
      const auto last = static_cast<std::size_t>(end_ - blocks_.back().get());
      full_ += last;
      n = std::min(2 * last, max_block);
    }
    blocks_.push_back(std::unique_ptr<T[]>(new T[n]));
    next_ = blocks_.back().get();
    end_ = next_ + n;
  }

  std::vector<std::unique_ptr<T[]>> blocks_;
  T* next_ = nullptr;
  T* end_ = nullptr;
  std::size_t full_ = 0;  // values in the blocks before the last
};

/// The durations of one group of slices, kept compactly: most are shorter
/// than 4.3 s and take four bytes; the longer ones, all above those, take
/// eight.
class durations {
 public:
  void add(std::int64_t ns) {
    if (ns < 0) ns = 0;
    total_ += ns;
    min_ = std::min(min_, ns);
    max_ = std::max(max_, ns);
    if (ns <= static_cast<std::int64_t>(std::numeric_limits<std::uint32_t>::max())) {
      short_.push_back(static_cast<std::uint32_t>(ns));
    } else {
      long_.push_back(ns);
    }
  }
  std::size_t size() const noexcept {
    return short_.size() + long_.size() + sorted_short_.size() + sorted_long_.size();
  }
  std::int64_t total() const noexcept { return total_; }
  std::int64_t min() const noexcept { return size() == 0 ? 0 : min_; }
  std::int64_t max() const noexcept { return max_; }
  /// The duration at percentile `p` (nearest rank). Ranks are asked for in
  /// increasing order: each only looks above the previous one. Durations
  /// added after the first call are not looked at.
  std::int64_t percentile(double p) {
    if (size() == 0) return 0;
    if (sorted_short_.empty() && sorted_long_.empty()) {  // one array each: selecting in blocks is slow
      sorted_short_ = short_.take_all();
      sorted_long_ = long_.take_all();
    }
    const std::size_t n = sorted_short_.size() + sorted_long_.size();
    const auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(n) + 0.999999);
    const std::size_t at = std::min(n, std::max<std::size_t>(rank, 1)) - 1;
    if (at < sorted_short_.size()) return select(sorted_short_, at, short_from_);
    return select(sorted_long_, at - sorted_short_.size(), long_from_);
  }

 private:
  template <class T>
  static std::int64_t select(std::vector<T>& v, std::size_t at, std::size_t& from) {
    T* const first = v.data();
    std::nth_element(first + std::min(from, at), first + at, first + v.size());
    from = at;
    return static_cast<std::int64_t>(v[at]);
  }

  blocks<std::uint32_t> short_;
  blocks<std::int64_t> long_;
  std::vector<std::uint32_t> sorted_short_;  // short_ and long_, once percentiles are asked for
  std::vector<std::int64_t> sorted_long_;
  std::size_t short_from_ = 0, long_from_ = 0;
  // Kept as durations come: going over the blocks again costs more than this.
  std::int64_t total_ = 0, min_ = std::numeric_limits<std::int64_t>::max(), max_ = 0;
};

/// Gathers the durations of slices, window by window, for range_summary.csv.
class summary_builder {
 public:
  /// The host slices of `events` and the device slices pointing into them.
  void add(const std::vector<trace_event>& events, const std::vector<device_event>& device) {
    for (const trace_event& e : events) {
      if (e.what != trace_event::type::slice || e.incomplete || e.began_before_window) continue;
      group(key_of(host_side, e.domain, e.name)).add(e.dur);
    }
    for (const device_event& e : device) {
      if (e.instant || e.host >= events.size()) continue;
      const trace_event& host = events[e.host];
      group(key_of(device_side, host.domain, host.name)).add(e.dur);
    }
  }

  /// The CSV, sorted by total time; `d` holds the strings and domains.
  std::string render(const trace_data& d) {
    struct row {
      std::string line;
      std::int64_t total;
    };
    std::vector<row> rows;
    auto us = [](std::int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1000.0); };
    for (auto& [key, durs] : groups_) {
      const std::int64_t total = durs.total();
      const std::int64_t shortest = durs.min(), longest = durs.max();
      const std::int64_t p50 = durs.percentile(50);
      const std::int64_t p90 = durs.percentile(90);
      const std::int64_t p99 = durs.percentile(99);
      const auto side = static_cast<int>(key >> 48);
      const auto domain = static_cast<std::uint16_t>(key >> 32);
      const auto name = static_cast<std::uint32_t>(key);
      const char* where = side == device_side ? "device" : "host";
      const std::string_view domain_name =
          domain < d.domains.size() ? std::string_view(d.domains[domain]) : std::string_view("?");
      const std::string_view name_text = name < d.strings.size() ? std::string_view(d.strings[name]) : "";
      rows.push_back({fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", csv_cell(domain_name), csv_cell(name_text),
                                  where, durs.size(), us(total), us(total / static_cast<std::int64_t>(durs.size())),
                                  us(shortest), us(longest), us(p50), us(p90), us(p99)),
                      total});
    }
    std::stable_sort(rows.begin(), rows.end(), [](const row& a, const row& b) { return a.total > b.total; });
    std::string out = "domain,name,where,count,total_us,mean_us,min_us,max_us,p50_us,p90_us,p99_us\n";
    for (const row& r : rows) out += r.line;
    return out;
  }

 private:
  // (where: device 0, host 1; domain; name) -> durations in ns. Numbers, not
  // strings, as keys: this runs once per slice, and consecutive slices
  // mostly share a name, so the last group found is tried first.
  static constexpr int device_side = 0, host_side = 1;

  static std::uint64_t key_of(int side, std::uint16_t domain, std::uint32_t name) noexcept {
    return std::uint64_t(side) << 48 | std::uint64_t{domain} << 32 | name;
  }

  durations& group(std::uint64_t key) {
    if (last_ == nullptr || key != last_key_) {
      last_ = &groups_[key];
      last_key_ = key;
    }
    return *last_;
  }

  std::map<std::uint64_t, durations> groups_;
  std::uint64_t last_key_ = 0;
  durations* last_ = nullptr;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
