// What the marker layer keeps while the control side has not installed its
// table yet: strings registered, domains used and streams or threads named
// during static initialisation, or before a shared object that starts
// profiling is loaded.
// Nothing given before then is lost; the control side takes it over when it
// installs the table.
#pragma once

#include "abi.hpp"

#include <atomic>
#include <cstdint>
#include <string_view>

#include "../stream.hpp"
#include "domain_handle.hpp"
#include "kept_string.hpp"
#include "marker_state.hpp"
#include "platform.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Marks the id of a string registered before the table was installed: the
/// control side maps it to the string's real id (see string_table::adopt).
inline constexpr std::uint64_t pending_string_bit = std::uint64_t{1} << 42;

/// Something given while no table was installed. Entries never change once
/// pushed, so that threads may read the list while others push.
struct pending_entry {
  enum class kind : std::uint8_t { string, stream_name, domain };
  pending_entry* next = nullptr;
  kind what = kind::string;
  std::uint64_t id = 0;             // string: its pending id
  stream_t stream = nullptr;        // stream_name: the stream
  domain_handle* handle = nullptr;  // domain: a handle to register at install
  std::string_view text;            // string, stream name or domain name: a copy kept for good
};

struct pending_list {
  std::atomic<pending_entry*> head{nullptr};
  std::atomic<std::uint64_t> strings{0};
};

NPUPROF_PROCESS_WIDE inline pending_list g_pending;

/// The calling thread's name, given before the table was installed; taken
/// (and freed) when the thread registers.
NPUPROF_PROCESS_WIDE inline thread_local const char* t_pending_thread_name = nullptr;

/// The first entry that `same` accepts, or null. The list is short: it holds
/// what was given before the control side loaded, each thing once.
template <class F>
pending_entry* find_pending(F&& same) noexcept {
  for (pending_entry* e = g_pending.head.load(std::memory_order_acquire); e != nullptr; e = e->next) {
    if (same(*e)) return e;
  }
  return nullptr;
}

/// Pushes `e`; if the table got installed meanwhile, has it taken over now
/// (the control side may have taken the list before the push). Sequentially
/// consistent with install_control_table's store and take, so that one of
/// the two always sees the other.
NPUPROF_COLD inline void push_pending(pending_entry* e) {
  e->next = g_pending.head.load(std::memory_order_relaxed);
  while (!g_pending.head.compare_exchange_weak(e->next, e, std::memory_order_seq_cst, std::memory_order_relaxed)) {
  }
  if (const control_table* c = g_markers.control.load(std::memory_order_seq_cst)) c->adopt_pending();
}

/// The id of a string registered before the table was installed; the same
/// id for the same text.
NPUPROF_COLD inline std::uint64_t intern_pending(std::string_view s) {
  using k = pending_entry::kind;
  if (pending_entry* e = find_pending([&](const pending_entry& x) { return x.what == k::string && x.text == s; })) {
    return e->id;
  }
  auto* e = new pending_entry();
  e->id = pending_string_bit | g_pending.strings.fetch_add(1, std::memory_order_relaxed);
  e->text = keep_copy(s);
  push_pending(e);
  return e->id;
}

NPUPROF_COLD inline void name_stream_pending(stream_t stream, std::string_view name) {
  using k = pending_entry::kind;
  // The newest name of a stream is the first found: only a new name is kept.
  if (pending_entry* e =
          find_pending([&](const pending_entry& x) { return x.what == k::stream_name && x.stream == stream; })) {
    if (e->text == name) return;
  }
  auto* e = new pending_entry();
  e->what = k::stream_name;
  e->stream = stream;
  e->text = keep_copy(name);
  push_pending(e);
}

/// Turns `h` off until the table is installed, which then registers it: a
/// marker of it costs a load and a branch meanwhile, as when no session runs.
NPUPROF_COLD inline void defer_domain(domain_handle& h) {
  std::uint16_t expected = domain_handle::unregistered;
  if (!h.state.compare_exchange_strong(expected, 0, std::memory_order_relaxed)) return;  // deferred already
  auto* e = new pending_entry();
  e->what = pending_entry::kind::domain;
  e->handle = &h;
  e->text = h.name != nullptr ? std::string_view(h.name) : std::string_view();
  push_pending(e);
}

/// The handle of a run-time domain named before the table was installed;
/// the same handle for the same name.
NPUPROF_COLD inline domain_handle& pending_domain_by_name(std::string_view name) {
  using k = pending_entry::kind;
  if (pending_entry* e = find_pending([&](const pending_entry& x) { return x.what == k::domain && x.text == name; })) {
    return *e->handle;
  }
  auto* h = new domain_handle(keep_copy(name).data());
  defer_domain(*h);
  return *h;
}

/// The text of a pending string id, while no table is installed.
inline std::string_view pending_text(std::uint64_t id) noexcept {
  pending_entry* e =
      find_pending([&](const pending_entry& x) { return x.what == pending_entry::kind::string && x.id == id; });
  return e != nullptr ? e->text : std::string_view();
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
