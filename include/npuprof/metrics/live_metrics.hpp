// Live metrics: what npuprof's background thread learns from the records it
// drains, kept for a Prometheus endpoint. A latency histogram per range name
// (and per stream for the device part of stream-tied ranges), a count per
// mark, the last value of each counter, and the session's health. Recording
// threads never touch any of it: the drainer reads their published records
// as it reads them for the trace.
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "../backend/device_backend.hpp"
#include "../export/json_escape.hpp"
#include "../metrics_endpoint.hpp"
#include "../marker/chunk.hpp"
#include "../engine/id_table.hpp"
#include "../marker/record.hpp"
#include "../engine/record_visitor.hpp"
#include "../engine/state.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// One label set of a metric and what it has seen.
struct metric_series {
  std::uint32_t domain_index = 0;
  std::string domain, name;
  std::string stream;                  // device times only: the stream's name
  std::vector<std::uint64_t> buckets;  // histograms: per bucket, not cumulative; the last is +Inf
  std::uint64_t count = 0;             // histogram observations, marks
  double value = 0;                    // histograms: the sum in seconds; counters: the last sample
};

/// What the session says about itself on the endpoint.
struct metrics_health {
  std::uint64_t dropped_events = 0;
  std::uint64_t buffer_bytes = 0;
  std::uint64_t unmatched_range_ends = 0;  // ends whose begin never came
  std::uint64_t series_overflow = 0;       // observations folded into name="other"
  std::uint64_t ranges_not_measured = 0;   // past the limits on ranges in flight
};

/// Everything the endpoint shows, copied at a scrape.
struct metrics_view {
  std::vector<double> bounds;  // bucket upper bounds, seconds
  std::vector<metric_series> ranges, device, marks, counters;
  metrics_health health;
};

/// Domain labels by domain index, looked up once. Labels are valid UTF-8:
/// domains whose names differ only in invalid bytes share one.
class domain_labels {
 public:
  const std::string& of(std::uint32_t index) {
    if (index >= labels_.size()) labels_.resize(index + 1);
    std::optional<std::string>& l = labels_[index];
    if (!l) l = valid_utf8(state().domains.name_of(index));
    return *l;
  }

 private:
  std::vector<std::optional<std::string>> labels_;
};

/// The label sets of one metric, found by name and capped: past
/// `max_series` names, a name is folded into name="other" of its domain (and
/// stream); past `max_others` of those, into domain="(other domains)".
class series_family {
 public:
  /// A series, and whether its name was folded into "other".
  struct found {
    std::uint32_t index;
    bool folded;
  };
  static constexpr std::size_t max_others = 64;

  series_family(domain_labels& domains, std::size_t max_series, std::size_t buckets)
      : domains_(domains), max_series_(max_series), buckets_(buckets), by_id_(cache_slots), by_text_(cache_slots) {}

  /// The series of registered string `id` in `domain`; `name()` gives its
  /// text when it is not known yet. Recent ids are found in a small cache.
  template <class Name>
  found by_id(std::uint32_t domain, std::uint64_t id, Name&& name) {
    const std::uint64_t key = (std::uint64_t{domain} << domain_shift) | id;
    id_slot& c = by_id_[slot_of(key)];
    if (c.key == key) return c.series;
    c = {key, by_name(domain, name())};
    return c.series;
  }

  /// The series of a copied name; recent names are found in a small cache
  /// by their hash, and checked byte by byte.
  found by_text(std::uint32_t domain, std::string_view name) {
    const std::size_t hash = std::hash<std::string_view>{}(name);
    text_slot& c = by_text_[slot_of(hash ^ domain)];
    if (c.hash == hash && c.used && series_[c.index].domain_index == domain && series_[c.index].name == name) {
      return {c.index, false};
    }
    const found s = by_name(domain, name);
    if (!s.folded) c = {hash, s.index, true};
    return s;
  }

  /// The series of a name given as bytes (made valid UTF-8 for the label).
  found by_name(std::uint32_t domain, std::string_view name, std::string_view stream = {}) {
    const std::string& label = domains_.of(domain);
    make_key(label, name, stream);
    if (auto it = index_.find(key_); it != index_.end()) return {it->second, false};
    if (names_ < max_series_) {
      ++names_;
      return {add(domain, label, stream), false};
    }
    make_key(label, "other", stream);
    if (auto it = index_.find(key_); it != index_.end()) return {it->second, true};
    if (others_ < max_others) {
      ++others_;
      return {add(domain, label, stream), true};
    }
    static const std::string& rest = *new std::string("(other domains)");  // used during exit too
    make_key(rest, "other", stream);
    if (auto it = index_.find(key_); it != index_.end()) return {it->second, true};
    return {add(domain, rest, stream), true};
  }

  metric_series& operator[](std::uint32_t i) noexcept { return series_[i]; }
  const std::vector<metric_series>& all() const noexcept { return series_; }

 private:
  // Domain label, name and stream label as one key: 0xFF, which valid UTF-8
  // never holds, separates them.
  void make_key(const std::string& domain, std::string_view name, std::string_view stream) {
    key_.assign(domain);
    key_ += '\xFF';
    const bool ascii =
        std::all_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    if (ascii) {
      key_.append(name);
    } else {
      key_.append(valid_utf8(name));
    }
    if (!stream.empty()) {
      key_ += '\xFF';
      key_.append(stream);
    }
  }

  std::uint32_t add(std::uint32_t domain, const std::string& label, std::string_view stream) {
    metric_series& s = series_.emplace_back();
    s.domain_index = domain;
    s.domain = label;
    const std::size_t name_at = label.size() + 1;
    const std::size_t name_end = key_.find('\xFF', name_at);
    s.name = key_.substr(name_at, name_end == std::string::npos ? std::string::npos : name_end - name_at);
    s.stream = std::string(stream);
    s.buckets.assign(buckets_, 0);
    const auto i = static_cast<std::uint32_t>(series_.size() - 1);
    index_.emplace(key_, i);
    return i;
  }

  static constexpr std::size_t cache_slots = 512;
  struct id_slot {
    std::uint64_t key = ~std::uint64_t{0};  // no domain and id make it
    found series{0, false};
  };
  struct text_slot {
    std::size_t hash = 0;
    std::uint32_t index = 0;
    bool used = false;
  };
  static std::size_t slot_of(std::uint64_t key) noexcept {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & (cache_slots - 1);
  }

  domain_labels& domains_;
  std::size_t max_series_;
  std::size_t buckets_;
  std::size_t names_ = 0, others_ = 0;
  std::vector<id_slot> by_id_;
  std::vector<text_slot> by_text_;
  std::vector<metric_series> series_;
  std::unordered_map<std::string, std::uint32_t> index_;
  std::string key_;
};

/// The live metrics of one session. The session feeds it under its control
/// lock (read(), read_live(), resolve_device(), end_flush()); the endpoint
/// takes view() from its own threads.
class live_metrics {
 public:
  /// Limits on what is measured while it is in flight: ranges begun with an
  /// id and not ended yet (past it, those open are let go and counted), ends
  /// read before their begin, device times not resolved yet.
  static constexpr std::size_t max_open_ranges = 1 << 16;
  static constexpr std::size_t max_device_pending = 1 << 16;

  explicit live_metrics(const metrics_endpoint& settings)
      : bounds_(settings.buckets),
        ranges_(domains_, settings.max_series, settings.buckets.size() + 1),
        device_(domains_, settings.max_series, settings.buckets.size() + 1),
        marks_(domains_, settings.max_series, 0),
        counters_(domains_, settings.max_series, 0) {
    for (double b : bounds_) bound_ns_.push_back(static_cast<std::int64_t>(std::llround(b * 1e9)));
  }

  /// Records stamped before `start_ticks` are not measured; ticks last
  /// `ns_per_tick` nanoseconds.
  void calibrate(std::uint64_t start_ticks, double ns_per_tick) noexcept {
    start_ticks_ = start_ticks;
    ns_per_tick_ = ns_per_tick;
  }

  /// Measures the records of `c` not read yet, up to `end`.
  void read(chunk& c, std::uint64_t* end) {
    if (end <= c.metered) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uint64_t* p = c.metered;
    while (p < end) {
      const std::size_t n = record_words(p, end);
      if (n == 0) break;  // not a record: the decoder counts it
      if (p[word::ticks] >= start_ticks_) measure(p);
      p += n;
    }
    c.metered = end;
  }

  /// Measures what live threads have published so far.
  void read_live() {
    state().threads.for_each_live([&](thread_buffer& tb) {
      if (chunk* c = tb.current.load(std::memory_order_acquire)) read(*c, c->published.load(std::memory_order_acquire));
    });
  }

  /// Measures the device part of stream-tied ranges whose device times the
  /// backend has resolved.
  void resolve_device(const device_backend& backend, std::int64_t now_ns) {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!device_pending_.empty() && (device_pending_.size() > max_device_pending ||
                                        now_ns - device_pending_.front().read_ns > device_patience_ns)) {
      device_pending_.pop_front();
      ++health_.ranges_not_measured;
    }
    auto resolved = [&](const device_range& r) {
      std::int64_t b = 0, e = 0;
      if (!backend.device_ns(r.begin_stream, r.begin_seq, b) || !backend.device_ns(r.end_stream, r.end_seq, e)) {
        return false;
      }
      observe(device_[r.series], std::max<std::int64_t>(0, e - b));
      return true;
    };
    device_pending_.erase(std::remove_if(device_pending_.begin(), device_pending_.end(), resolved),
                          device_pending_.end());
  }

  /// Ends a flush: ends that waited two flushes for their begin are counted
  /// as unmatched; the session's drops so far and its buffer bytes now.
  void end_flush(std::uint64_t dropped_events, std::uint64_t buffer_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++flush_;
    for (auto it = early_ends_.begin(); it != early_ends_.end();) {
      if (flush_ - it->second.flush > 2) {
        if (!forgotten(it->first)) ++health_.unmatched_range_ends;
        it = early_ends_.erase(it);
      } else {
        ++it;
      }
    }
    health_.dropped_events = dropped_events;
    health_.buffer_bytes = buffer_bytes;
  }

  /// A copy of everything, for a scrape.
  metrics_view view() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return {bounds_, ranges_.all(), device_.all(), marks_.all(), counters_.all(), health_};
  }

 private:
  // The bucket of a duration (the last one: +Inf).
  std::size_t bucket_of(std::int64_t ns) const noexcept {
    return static_cast<std::size_t>(std::lower_bound(bound_ns_.begin(), bound_ns_.end(), ns) - bound_ns_.begin());
  }

  static constexpr std::int64_t device_patience_ns = 60'000'000'000;  // a device range still queued after a minute

  // A range begun with an id, waiting for its end (or an end for its begin).
  struct open_range {
    std::uint64_t ticks = 0;
    std::uint32_t series = 0;
    bool folded = false;
    std::uint64_t stream = 0, seq = no_device_event;  // device event at its begin
    std::uint64_t flush = 0;                          // ends: when it was read
  };
  struct device_range {
    std::uint32_t series;
    std::uint64_t begin_stream, begin_seq, end_stream, end_seq;
    std::int64_t read_ns;
  };

  void measure(const std::uint64_t* p) {
    record_meter meter{*this};
    visit_record(p, meter);
  }

  // What each kind of record adds to the metrics.
  struct record_meter {
    live_metrics& m;

    void complete(const record_view& r) {
      const series_family::found s = m.series_of(m.ranges_, r);
      m.observe_range(s, r.end_ticks() - r.ticks());
      if (r.has_device()) m.queue_device(s.index, r.stream(), r.device_seq(0), r.stream(), r.device_seq(1));
    }
    void begin(const record_view& r) {
      const series_family::found s = m.series_of(m.ranges_, r);
      m.begin_range(r.range_id(), {r.ticks(), s.index, s.folded, r.stream(), device_seq(r), 0});
    }
    void end(const record_view& r) {
      m.end_range(r.range_id(), {r.ticks(), 0, false, r.stream(), device_seq(r), m.flush_});
    }
    void mark(const record_view& r) {
      const series_family::found s = m.series_of(m.marks_, r);
      ++m.marks_[s.index].count;
      if (s.folded) ++m.health_.series_overflow;
    }
    void counter(const record_view& r) {
      const series_family::found s = m.series_of(m.counters_, r);
      m.counters_[s.index].value = r.sample().as_double();
      ++m.counters_[s.index].count;
      if (s.folded) ++m.health_.series_overflow;
    }
    static std::uint64_t device_seq(const record_view& r) { return r.has_device() ? r.device_seq(0) : no_device_event; }
  };

  // The series of record r's name in `family`.
  series_family::found series_of(series_family& family, const record_view& r) {
    if (r.registered()) return family.by_id(r.domain(), r.name_id(), [&] { return registered(r.name_id()); });
    return family.by_text(r.domain(), r.name_text());
  }

  // Registered strings are looked up once.
  std::string_view registered(std::uint64_t id) {
    auto it = registered_.find(id);
    if (it == registered_.end()) it = registered_.emplace(id, std::string(state().strings.lookup(id))).first;
    return it->second;
  }

  void begin_range(std::uint64_t id, const open_range& begin) {
    if (id == 0) return;  // not a range id: the decoder counts the record
    if (!early_ends_.empty()) {
      if (auto it = early_ends_.find(id); it != early_ends_.end()) {  // its end was read first
        finish_range(begin, it->second);
        early_ends_.erase(it);
        return;
      }
    }
    if (open_.size() >= max_open_ranges) {
      // Mostly ranges whose end will never come (dropped, or never ended):
      // starting afresh keeps the limit from closing for good. Ends that do
      // come for them are known by their ids (each thread's rise) and not
      // counted again.
      health_.ranges_not_measured += open_.size();
      open_.for_each([&](std::uint64_t open_id, const open_range&) {
        std::uint64_t& below = forgotten_up_to_[open_id >> id_seq_bits];
        below = std::max(below, open_id & id_seq_mask);
      });
      open_.clear();
    }
    open_.put(id, begin);
  }

  void end_range(std::uint64_t id, const open_range& end) {
    if (id == 0) return;
    open_range begin;
    if (open_.take(id, begin)) {
      finish_range(begin, end);
      return;
    }
    if (early_ends_.size() >= max_open_ranges) {
      if (!forgotten(id)) ++health_.unmatched_range_ends;
      return;
    }
    early_ends_.emplace(id, end);  // a repeated end stays unmatched
  }

  // Range ids are a thread's number above id_seq_bits and its count below.
  static constexpr int id_seq_bits = 40;
  static constexpr std::uint64_t id_seq_mask = (std::uint64_t{1} << id_seq_bits) - 1;

  // Whether `id` was let go at the limit on open ranges (already counted).
  bool forgotten(std::uint64_t id) const {
    auto it = forgotten_up_to_.find(id >> id_seq_bits);
    return it != forgotten_up_to_.end() && (id & id_seq_mask) <= it->second;
  }

  void finish_range(const open_range& begin, const open_range& end) {
    observe_range({begin.series, begin.folded}, end.ticks - begin.ticks);
    if (begin.seq != no_device_event && end.seq != no_device_event) {
      queue_device(begin.series, begin.stream, begin.seq, end.stream, end.seq);
    }
  }

  void observe_range(series_family::found s, std::uint64_t ticks) {
    if (static_cast<std::int64_t>(ticks) < 0) ticks = 0;  // an end stamped on another core, just before
    observe(ranges_[s.index], static_cast<std::int64_t>(static_cast<double>(ticks) * ns_per_tick_));
    if (s.folded) ++health_.series_overflow;
  }

  void observe(metric_series& s, std::int64_t ns) {
    ++s.buckets[bucket_of(ns)];
    ++s.count;
    s.value += static_cast<double>(ns) * 1e-9;
  }

  // The device series is found now, by the host series' labels and the
  // stream's name: the name may change later, the label does not.
  void queue_device(std::uint32_t host_series, std::uint64_t begin_stream, std::uint64_t begin_seq,
                    std::uint64_t end_stream, std::uint64_t end_seq) {
    if (begin_seq == no_device_event || end_seq == no_device_event) return;
    const metric_series& host = ranges_[host_series];
    const series_family::found s = device_.by_name(host.domain_index, host.name, stream_label(begin_stream));
    if (s.folded) ++health_.series_overflow;
    device_pending_.push_back({s.index, begin_stream, begin_seq, end_stream, end_seq, steady_ns()});
  }

  const std::string& stream_label(std::uint64_t stream) {
    auto it = stream_labels_.find(stream);
    if (it != stream_labels_.end()) return it->second;
    std::string label = fmt::format("0x{:x}", stream);
    for (auto& [handle, name] : state().streams.all()) {
      if (reinterpret_cast<std::uintptr_t>(handle) == stream) label = valid_utf8(name);
    }
    return stream_labels_.emplace(stream, std::move(label)).first->second;
  }

  mutable std::mutex mutex_;  // taken by read(), resolve_device(), end_flush() and view()
  std::vector<double> bounds_;
  std::vector<std::int64_t> bound_ns_;
  domain_labels domains_;  // before the families, which use it
  series_family ranges_, device_, marks_, counters_;
  metrics_health health_;
  std::uint64_t start_ticks_ = 0;
  double ns_per_tick_ = 1.0;
  std::uint64_t flush_ = 0;
  std::unordered_map<std::uint64_t, std::string> registered_;
  id_table<open_range> open_;                                         // by range id
  std::unordered_map<std::uint64_t, open_range> early_ends_;          // by range id: few
  std::unordered_map<std::uint64_t, std::uint64_t> forgotten_up_to_;  // by thread number: ids let go up to
  std::deque<device_range> device_pending_;
  std::unordered_map<std::uint64_t, std::string> stream_labels_;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
