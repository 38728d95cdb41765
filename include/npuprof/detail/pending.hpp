// What the marker layer keeps while the control side has not installed its
// table yet: strings registered and streams named during static
// initialisation, or before a shared object that starts profiling is loaded.
// Nothing given before then is lost; the control side takes it over when it
// installs the table.
#pragma once

#include "abi.hpp"

#include <atomic>
#include <cstdint>
#include <string_view>

#include "../stream.hpp"
#include "kept_string.hpp"
#include "marker_state.hpp"
#include "platform.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Marks the id of a string registered before the table was installed: the
/// control side maps it to the string's real id (see string_table::adopt).
inline constexpr std::uint64_t pending_string_bit = std::uint64_t{1} << 42;

/// A string registered, or a stream named, while no table was installed.
struct pending_entry {
  pending_entry* next = nullptr;
  std::uint64_t id = 0;        // a pending string id; 0 for a stream name
  stream_t stream = nullptr;   // the stream named
  std::string_view text;       // a copy kept for the life of the process
};

struct pending_list {
  std::atomic<pending_entry*> head{nullptr};
  std::atomic<std::uint64_t> strings{0};
};

NPUPROF_PROCESS_WIDE inline pending_list g_pending;

/// The calling thread's name, given before the table was installed; taken
/// when the thread registers.
NPUPROF_PROCESS_WIDE inline thread_local const char* t_pending_thread_name = nullptr;

/// Pushes `e`; if the table got installed meanwhile, makes sure it is taken
/// over now (the control side may have looked at the list before the push).
NPUPROF_COLD inline void push_pending(pending_entry* e) {
  e->next = g_pending.head.load(std::memory_order_relaxed);
  while (!g_pending.head.compare_exchange_weak(e->next, e, std::memory_order_release, std::memory_order_relaxed)) {
  }
  if (const control_table* c = control()) c->adopt_pending();
}

/// The id of a string registered before the table was installed.
NPUPROF_COLD inline std::uint64_t intern_pending(std::string_view s) {
  auto* e = new pending_entry();
  e->id = pending_string_bit | g_pending.strings.fetch_add(1, std::memory_order_relaxed);
  e->text = keep_copy(s);
  push_pending(e);
  return e->id;
}

NPUPROF_COLD inline void name_stream_pending(stream_t stream, std::string_view name) {
  auto* e = new pending_entry();
  e->stream = stream;
  e->text = keep_copy(name);
  push_pending(e);
}

/// The text of a pending string id, while no table is installed.
inline std::string_view pending_text(std::uint64_t id) noexcept {
  for (pending_entry* e = g_pending.head.load(std::memory_order_acquire); e != nullptr; e = e->next) {
    if (e->id == id) return e->text;
  }
  return {};
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
