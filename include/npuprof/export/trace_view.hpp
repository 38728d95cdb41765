// trace_view.json: the Trace Event Format timeline that Perfetto UI,
// chrome://tracing and MindStudio Insight open.
//
// Slices on one thread track always nest strictly. Scoped ranges nest by
// construction; a range begun with an id that does not nest with its thread's
// other slices (it ended on another thread, or overlaps them) is placed on a
// "cross-thread ranges" track of its own instead.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../trace_data.hpp"
#include "file.hpp"
#include "json_escape.hpp"

namespace npuprof::detail {

/// First tid of the synthetic tracks that hold cross-thread ranges; above any
/// Linux thread id.
inline constexpr std::uint32_t lane_tid_base = 0x40000000;

inline void append_us(fmt::memory_buffer& out, std::int64_t ns) {
  if (ns < 0) ns = 0;
  const fmt::format_int us(ns / 1000);
  out.append(us.data(), us.data() + us.size());
  const auto frac = static_cast<int>(ns % 1000);
  const char digits[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10)};
  out.append(digits, digits + 4);
}

inline void append_int(fmt::memory_buffer& out, std::uint64_t v) {
  const fmt::format_int s(v);
  out.append(s.data(), s.data() + s.size());
}

class trace_view_writer {
 public:
  explicit trace_view_writer(const trace_data& data) : data_(data), track_(data.events.size()) {}

  /// Writes the document in pieces of about `chunk` bytes to `sink`.
  template <class Sink>
  void write(Sink&& sink, std::size_t chunk = 1 << 20) {
    assign_tracks();
    fmt::memory_buffer out;
    out.push_back('[');
    write_metadata(out);
    for (std::size_t i : sorted_events()) {
      write_event(out, data_.events[i], track_[i]);
      if (out.size() >= chunk) {
        sink(std::string_view(out.data(), out.size()));
        out.clear();
      }
    }
    out.append(std::string_view("\n]\n"));
    sink(std::string_view(out.data(), out.size()));
  }

 private:
  struct span {
    std::int64_t begin, end;
    std::size_t event;
  };

  static bool earlier(const trace_event& a, const trace_event& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    return a.dur > b.dur;  // longer first, so the parent comes before its child
  }

  // Each slice stays on its thread unless it breaks strict nesting there.
  void assign_tracks() {
    std::map<std::uint32_t, std::vector<std::size_t>> by_thread;
    std::vector<std::size_t> moved;
    for (std::size_t i = 0; i < data_.events.size(); ++i) {
      const trace_event& e = data_.events[i];
      track_[i] = e.tid;
      if (tids_.empty() || tids_.back() != e.tid) tids_.push_back(e.tid);
      if (e.what != trace_event::type::slice) continue;
      if (e.id_matched && e.end_tid != e.tid) {
        moved.push_back(i);
      } else {
        by_thread[e.tid].push_back(i);
      }
    }
    for (auto& [tid, list] : by_thread) keep_nested(list, moved);
    place_on_lanes(moved);
  }

  void keep_nested(std::vector<std::size_t>& list, std::vector<std::size_t>& moved) {
    const auto& ev = data_.events;
    std::sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) { return earlier(ev[a], ev[b]); });
    std::vector<span> stack;
    for (std::size_t i : list) {
      const span s{ev[i].ts, ev[i].ts + ev[i].dur, i};
      for (;;) {
        while (!stack.empty() && stack.back().end <= s.begin) stack.pop_back();
        if (stack.empty() || stack.back().end >= s.end) break;  // nests
        if (ev[i].id_matched) break;                            // s goes
        if (!ev[stack.back().event].id_matched) break;          // two scoped ranges: keep both
        moved.push_back(stack.back().event);                    // the overlapping id range goes
        stack.pop_back();
      }
      const bool nests = stack.empty() || stack.back().end >= s.end;
      if (!nests && ev[i].id_matched) {
        moved.push_back(i);
      } else {
        stack.push_back(s);
      }
    }
  }

  void place_on_lanes(std::vector<std::size_t>& moved) {
    const auto& ev = data_.events;
    std::sort(moved.begin(), moved.end(), [&](std::size_t a, std::size_t b) { return earlier(ev[a], ev[b]); });
    std::vector<std::vector<span>> lanes;
    for (std::size_t i : moved) {
      const span s{ev[i].ts, ev[i].ts + ev[i].dur, i};
      std::size_t lane = 0;
      for (; lane < lanes.size(); ++lane) {
        auto& stack = lanes[lane];
        while (!stack.empty() && stack.back().end <= s.begin) stack.pop_back();
        if (stack.empty() || stack.back().end >= s.end) break;
      }
      if (lane == lanes.size()) lanes.emplace_back();
      lanes[lane].push_back(s);
      track_[i] = lane_tid_base + static_cast<std::uint32_t>(lane);
    }
    lane_count_ = lanes.size();
  }

  // By track, then start, longer first. Sorting compact keys keeps the sort
  // in cache.
  std::vector<std::size_t> sorted_events() const {
    struct key {
      std::uint32_t track;
      std::int64_t ts;
      std::int64_t neg_dur;
      std::size_t index;
      bool operator<(const key& o) const {
        if (track != o.track) return track < o.track;
        if (ts != o.ts) return ts < o.ts;
        return neg_dur < o.neg_dur;
      }
    };
    std::vector<key> keys(data_.events.size());
    for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = {track_[i], data_.events[i].ts, -data_.events[i].dur, i};
    std::sort(keys.begin(), keys.end());
    std::vector<std::size_t> order(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) order[i] = keys[i].index;
    return order;
  }

  void write_meta_event(fmt::memory_buffer& out, const char* what, std::uint32_t tid, bool with_tid,
                        std::string_view key, std::string_view text, long number) {
    out.append(std::string_view(first_ ? "\n" : ",\n"));
    first_ = false;
    fmt::format_to(std::back_inserter(out), R"({{"name":"{}","ph":"M","pid":{})", what, data_.pid);
    if (with_tid) fmt::format_to(std::back_inserter(out), R"(,"tid":{})", tid);
    fmt::format_to(std::back_inserter(out), R"(,"args":{{"{}":)", key);
    if (key == "name") {
      append_json_string(out, text);
    } else {
      fmt::format_to(std::back_inserter(out), "{}", number);
    }
    out.append(std::string_view("}}"));
  }

  void write_metadata(fmt::memory_buffer& out) {
    write_meta_event(out, "process_name", 0, false, "name", data_.process_name, 0);
    write_meta_event(out, "process_sort_index", 0, false, "sort_index", "", 0);
    // Main thread first, then the others by thread id.
    std::vector<std::uint32_t> tids = tids_;
    std::sort(tids.begin(), tids.end());
    tids.erase(std::unique(tids.begin(), tids.end()), tids.end());
    std::stable_partition(tids.begin(), tids.end(), [&](std::uint32_t t) { return t == data_.pid; });
    long index = 0;
    for (std::uint32_t tid : tids) {
      auto it = data_.thread_names.find(tid);
      const std::string name =
          it != data_.thread_names.end() && !it->second.empty() ? it->second : fmt::format("Thread {}", tid);
      write_meta_event(out, "thread_name", tid, true, "name", name, 0);
      write_meta_event(out, "thread_sort_index", tid, true, "sort_index", "", index++);
    }
    for (std::size_t lane = 0; lane < lane_count_; ++lane) {
      const auto tid = lane_tid_base + static_cast<std::uint32_t>(lane);
      const std::string name =
          lane == 0 ? std::string("cross-thread ranges") : fmt::format("cross-thread ranges {}", lane + 1);
      write_meta_event(out, "thread_name", tid, true, "name", name, 0);
      write_meta_event(out, "thread_sort_index", tid, true, "sort_index", "", index++);
    }
  }

  void write_event(fmt::memory_buffer& out, const trace_event& e, std::uint32_t track) {
    auto it = std::back_inserter(out);
    const std::string_view domain = data_.domain_of(e);
    out.append(std::string_view(",\n{\"name\":"));
    append_json_string(out, data_.name_of(e));
    switch (e.what) {
      case trace_event::type::slice:
        out.append(std::string_view(",\"ph\":\"X\",\"ts\":"));
        append_us(out, e.ts);
        out.append(std::string_view(",\"dur\":"));
        append_us(out, e.dur);
        break;
      case trace_event::type::instant:
        out.append(std::string_view(",\"ph\":\"i\",\"s\":\"t\",\"ts\":"));
        append_us(out, e.ts);
        break;
      case trace_event::type::counter:
        out.append(std::string_view(",\"ph\":\"C\",\"ts\":"));
        append_us(out, e.ts);
        break;
    }
    out.append(std::string_view(",\"pid\":"));
    append_int(out, data_.pid);
    out.append(std::string_view(",\"tid\":"));
    append_int(out, track);
    out.append(std::string_view(",\"cat\":"));
    append_json_string(out, domain);
    out.append(std::string_view(",\"args\":{"));
    if (e.what == trace_event::type::counter) {
      append_json_string(out, data_.name_of(e));
      out.push_back(':');
      if (!e.value_is_double) {
        fmt::format_to(it, "{}", e.value.i64);
      } else if (std::isfinite(e.value.f64)) {
        fmt::format_to(it, "{}", e.value.f64);
      } else {
        out.append(std::string_view("null"));
      }
      out.append(std::string_view("}}"));
      return;
    }
    out.append(std::string_view("\"domain\":"));
    append_json_string(out, domain);
    out.append(std::string_view(e.what == trace_event::type::slice ? R"(,"event_type":"start/end")"
                                                                     : R"(,"event_type":"marker")"));
    if (e.stream != 0) fmt::format_to(it, R"(,"stream":"{:#x}")", e.stream);
    if (e.what == trace_event::type::slice && e.end_tid != e.tid) fmt::format_to(it, R"(,"end_tid":{})", e.end_tid);
    if (e.incomplete) out.append(std::string_view(R"(,"incomplete":true)"));
    out.append(std::string_view("}}"));
  }

  const trace_data& data_;
  std::vector<std::uint32_t> track_;
  std::vector<std::uint32_t> tids_;
  std::size_t lane_count_ = 0;
  bool first_ = true;
};

/// Writes trace_view.json to `path`, streaming.
inline void write_trace_view(const trace_data& data, const std::string& path) {
  file_writer file(path);
  trace_view_writer(data).write([&](std::string_view piece) { file.write(piece); });
  file.close();
}

}  // namespace npuprof::detail
