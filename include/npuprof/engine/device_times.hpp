// Device timestamps of one session, as the backend resolved them, and the
// mapping of the device clock onto the host's steady clock.
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Pairs of (host steady ns, device ns) taken at the same instant; maps any
/// device time onto the host clock by linear interpolation between the
/// nearest pairs, so that both the offset and the rate of the device clock
/// are corrected.
///
/// A pair's host time is known only to within the time the runtime call took
/// (its window); pairs whose window was much wider than the best one (the
/// thread was preempted) are left out.
class device_clock_map {
 public:
  void add(std::int64_t host_ns, std::int64_t device_ns, std::int64_t window_ns) {
    pairs_.push_back({device_ns, host_ns, window_ns});
  }

  std::size_t size() const noexcept { return pairs_.size(); }

  /// Drops imprecise pairs, and of pairs closer than `min_spacing_ns` keeps
  /// the more precise one (a short segment would magnify their errors into
  /// its rate); sorts the rest. Call once all are added.
  void seal(std::int64_t min_spacing_ns = 10'000'000) {
    if (pairs_.size() > 2) {
      std::int64_t best = pairs_[0].window;
      for (const pair& p : pairs_) best = std::min(best, p.window);
      const std::int64_t limit = std::max<std::int64_t>(8 * best, 50'000);
      std::vector<pair> kept;
      for (const pair& p : pairs_) {
        if (p.window <= limit) kept.push_back(p);
      }
      if (kept.size() >= 2) pairs_ = std::move(kept);
    }
    std::sort(pairs_.begin(), pairs_.end(), [](const pair& a, const pair& b) { return a.device < b.device; });
    std::vector<pair> spaced;
    for (const pair& p : pairs_) {
      if (spaced.empty() || p.device - spaced.back().device >= min_spacing_ns) {
        spaced.push_back(p);
      } else if (p.window < spaced.back().window) {
        spaced.back() = p;
      }
    }
    pairs_ = std::move(spaced);
  }

  std::int64_t to_host(std::int64_t device_ns) const {
    if (pairs_.empty()) return device_ns;
    if (pairs_.size() == 1) return pairs_[0].host + (device_ns - pairs_[0].device);
    auto hi = std::upper_bound(pairs_.begin(), pairs_.end(), device_ns,
                               [](std::int64_t d, const pair& p) { return d < p.device; });
    if (hi == pairs_.begin()) ++hi;
    if (hi == pairs_.end()) --hi;
    const auto lo = hi - 1;
    const double span_dev = static_cast<double>(hi->device - lo->device);
    const double rate = span_dev > 0 ? static_cast<double>(hi->host - lo->host) / span_dev : 1.0;
    return lo->host + static_cast<std::int64_t>(static_cast<double>(device_ns - lo->device) * rate);
  }

  /// Drops pairs taken before host time `from_ns`, keeping the last of them
  /// (times just after `from_ns` still interpolate) and at least two pairs.
  void forget_before(std::int64_t from_ns) {
    std::size_t n = 0;
    while (n + 1 < pairs_.size() && pairs_[n + 1].host < from_ns) ++n;
    n = std::min(n, pairs_.size() < 2 ? 0 : pairs_.size() - 2);
    pairs_.erase(pairs_.begin(), pairs_.begin() + static_cast<std::ptrdiff_t>(n));
  }

  /// Host ns per device ns over the whole session (1 when unknown).
  double rate() const {
    if (pairs_.size() < 2 || pairs_.back().device == pairs_.front().device) return 1.0;
    return static_cast<double>(pairs_.back().host - pairs_.front().host) /
           static_cast<double>(pairs_.back().device - pairs_.front().device);
  }

 private:
  struct pair {
    std::int64_t device, host, window;
  };
  std::vector<pair> pairs_;
};

/// Device times of the events of each stream, by sequence number.
struct device_times {
  static constexpr std::int64_t unknown = std::numeric_limits<std::int64_t>::min();

  struct stream_times {
    std::uint64_t base = 0;               // sequence number of device_ns[0]
    std::vector<std::int64_t> device_ns;  // `unknown` where it could not be read
  };

  std::unordered_map<std::uint64_t, stream_times> streams;  // by stream handle
  device_clock_map clock;

  /// The host time of event `seq` on `stream`, if it was resolved.
  bool host_ns(std::uint64_t stream, std::uint64_t seq, std::int64_t& out) const {
    auto it = streams.find(stream);
    if (it == streams.end() || seq < it->second.base) return false;
    const std::uint64_t i = seq - it->second.base;
    if (i >= it->second.device_ns.size() || it->second.device_ns[i] == unknown) return false;
    out = clock.to_host(it->second.device_ns[i]);
    return true;
  }
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
