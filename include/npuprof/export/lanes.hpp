// Tracks for slices that cannot stay where they were recorded (ranges ended
// on another thread or overlapping others, device slices of one stream that
// overlap): each goes on a track where it nests strictly.
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// A slice's extent, and which event it is.
struct slice_span {
  std::int64_t begin, end;
  std::size_t event;
};

/// Places slices, given in start order, on numbered tracks ("lanes"): on the
/// first of the first few lanes where the slice nests and begins after every
/// slice already there (a flow's end binds to the slice that begins at its
/// time on its track, so no two may), else on the lowest lane that is free
/// by then, else on a new one. Placing costs O(log n) however many lanes
/// are busy: thousands of overlapping ranges (a request backlog) need as
/// many lanes, and trying each one would be quadratic.
class lane_set {
 public:
  /// The lane `s` goes on. An instant (`slice` false) only needs a lane
  /// where it is inside every open slice, and takes no room.
  std::size_t place(const slice_span& s, bool slice = true) {
    free_until(s.begin);
    const std::size_t first = std::min(lanes_.size(), first_lanes_tried);
    for (std::size_t i = 0; i < first; ++i) {
      if (fits(i, s, slice)) return put(i, s, slice);
    }
    while (!free_.empty()) {
      const std::size_t i = free_.top();
      if (!fits_empty(i, s, slice)) {
        if (!lanes_[i].open.empty()) {  // taken again since it was listed
          free_.pop();
          lanes_[i].listed_free = false;
          continue;
        }
        break;  // free, but a slice began there at this very time
      }
      if (slice) {
        free_.pop();
        lanes_[i].listed_free = false;
      }
      return put(i, s, slice);
    }
    lanes_.emplace_back();
    return put(lanes_.size() - 1, s, slice);
  }

  std::size_t size() const noexcept { return lanes_.size(); }

 private:
  static constexpr std::size_t first_lanes_tried = 32;

  struct lane {
    std::vector<slice_span> open;  // a stack: each nests in the one below
    std::int64_t last_begin = std::numeric_limits<std::int64_t>::min();
    bool listed_free = false;  // in free_
  };

  void close_until(lane& l, std::int64_t t) {
    while (!l.open.empty() && l.open.back().end <= t) l.open.pop_back();
  }

  bool fits(std::size_t i, const slice_span& s, bool slice) {
    lane& l = lanes_[i];
    close_until(l, s.begin);
    const bool fresh_begin = !slice || l.last_begin < s.begin;
    return fresh_begin && (l.open.empty() || l.open.back().end >= s.end);
  }

  bool fits_empty(std::size_t i, const slice_span& s, bool slice) {
    lane& l = lanes_[i];
    close_until(l, s.begin);
    return l.open.empty() && (!slice || l.last_begin < s.begin);
  }

  std::size_t put(std::size_t i, const slice_span& s, bool slice) {
    if (!slice) return i;
    lane& l = lanes_[i];
    if (l.open.empty()) busy_.push({s.end, i});  // the lane is free again when this ends
    l.open.push_back(s);
    l.last_begin = s.begin;
    return i;
  }

  // Lanes whose bottom slice ended by `t` are free: listed in free_. An
  // entry of busy_ may be stale (its lane was emptied and taken again): the
  // lane itself says whether it is free.
  void free_until(std::int64_t t) {
    while (!busy_.empty() && busy_.top().first <= t) {
      const std::size_t i = busy_.top().second;
      busy_.pop();
      lane& l = lanes_[i];
      close_until(l, t);
      if (l.open.empty() && !l.listed_free) {
        free_.push(i);
        l.listed_free = true;
      }
    }
  }

  std::vector<lane> lanes_;
  using ends_at = std::pair<std::int64_t, std::size_t>;  // (end of the bottom slice, lane)
  std::priority_queue<ends_at, std::vector<ends_at>, std::greater<ends_at>> busy_;
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<std::size_t>> free_;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
