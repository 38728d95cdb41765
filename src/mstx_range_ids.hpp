// The range ids the mstx ABI hands out: 32 bits, never 0, unique among the
// ranges that are open. mstx's Python binding and torch_npu keep a range id
// in 32 bits, while npuprof's own ids (range_id) take 64.
//
// Each open mstx range holds a place in a fixed table; its mstx id is the
// place's index plus a lap number, so an end finds its range by index, with
// no search. The place also keeps the stream the range began on, which
// mstxRangeEnd does not name but the range's device end needs.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace npuprof_mstx {

class range_ids {
 public:
  /// mstx ranges that can be open at once.
  static constexpr std::uint32_t places = std::uint32_t{1} << 17;

  /// What an mstx id stands for: npuprof's range and the stream it began on.
  struct range {
    std::uint64_t id;
    void* stream;
  };

  /// An mstx id for npuprof's range `id` (not 0), begun on `stream`; 0 when
  /// no place is free (with `places` ranges open, or very nearly).
  std::uint32_t open(std::uint64_t id, void* stream) noexcept {
    // Each thread walks the table from its own start, one place per range it
    // begins: its ranges rarely meet another thread's, and an id comes back
    // only after `places` ranges of that thread, on its next lap. Where the
    // walk meets a run of taken places (other threads' open ranges), the
    // search jumps elsewhere.
    const std::uint64_t walk = (id >> 40) * 0x9e3779b1u + (id & ((std::uint64_t{1} << 40) - 1));
    const std::uint64_t lap = walk / places % laps + 1;
    for (std::uint64_t jump = 0; jump < jumps; ++jump) {
      const std::uint64_t from = jump == 0 ? walk : (walk + jump) * 0x9e3779b97f4a7c15ull >> 40;
      for (std::uint64_t pos = from; pos < from + probes; ++pos) {
        if (const std::uint32_t mstx = take(pos % places, lap, id, stream)) return mstx;
      }
    }
    return 0;
  }

  /// The range `mstx` names, its place freed. An id that is not open names
  /// the range that last ended under it (an end repeated, which the trace
  /// counts) or, failing that, an id no npuprof range has (an unknown end).
  range close(std::uint64_t mstx) noexcept {
    if (mstx > 0xffffffffu) return {unknown | mstx, nullptr};  // never handed out
    place& p = table_[mstx & (places - 1)];
    if (p.open.load(std::memory_order_acquire) == mstx) {
      const range r{p.range.load(std::memory_order_relaxed), p.stream.load(std::memory_order_relaxed)};
      auto mine = static_cast<std::uint32_t>(mstx);  // of two racing ends, one frees the place
      if (p.open.compare_exchange_strong(mine, 0, std::memory_order_acq_rel)) {
        p.closed.store(mine, std::memory_order_relaxed);
        p.closed_range.store(r.id, std::memory_order_relaxed);
        return r;
      }
    }
    if (p.closed.load(std::memory_order_relaxed) == mstx)
      return {p.closed_range.load(std::memory_order_relaxed), nullptr};
    return {unknown | mstx, nullptr};
  }

 private:
  static constexpr std::uint64_t probes = 64;                                   // places tried in a row
  static constexpr std::uint64_t jumps = 64;                                    // rows tried
  static constexpr std::uint64_t laps = (std::uint64_t{1} << 32) / places - 1;  // lap numbers 1 to laps
  // npuprof's ids keep their thread's index in the bits above 40, far below this one.
  static constexpr std::uint64_t unknown = std::uint64_t{1} << 63;

  // The mstx id of place `index` on lap `lap`, if the place is free.
  std::uint32_t take(std::uint64_t index, std::uint64_t lap, std::uint64_t id, void* stream) noexcept {
    place& p = table_[index];
    const auto mstx = static_cast<std::uint32_t>(lap * places + index);
    std::uint32_t free = 0;
    if (p.open.load(std::memory_order_relaxed) != 0 ||
        !p.open.compare_exchange_strong(free, mstx, std::memory_order_acquire)) {
      return 0;
    }
    // Read by the end, which the program orders after open() returns.
    p.range.store(id, std::memory_order_relaxed);
    p.stream.store(stream, std::memory_order_relaxed);
    return mstx;
  }

  struct place {
    std::atomic<std::uint32_t> open{0};    // the mstx id of the range open here; 0: free
    std::atomic<std::uint32_t> closed{0};  // the mstx id that last ended here
    std::atomic<std::uint64_t> range{0};
    std::atomic<std::uint64_t> closed_range{0};
    std::atomic<void*> stream{nullptr};
  };
  static_assert(sizeof(place) == 32, "two places to a cache line");

  place table_[places];
};

}  // namespace npuprof_mstx
