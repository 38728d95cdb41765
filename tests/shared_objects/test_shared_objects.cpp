// Two shared objects built with -fvisibility=hidden that include only the
// marker header, and the program, which starts the session: there is one
// npuprof state, one session, one trace.
#include "../support.hpp"

struct kernels {
  static constexpr const char* name = "kernels";
};

extern "C" void plugin_a_record();
extern "C" void plugin_b_record();
extern "C" const void* plugin_a_state();
extern "C" const void* plugin_b_state();
extern "C" const void* plugin_a_thread_buffer();
extern "C" const void* plugin_b_thread_buffer();
extern "C" std::uint64_t plugin_a_early_string_id();
extern "C" std::uint64_t plugin_b_early_string_id();
extern "C" void plugin_a_record_early();
extern "C" void plugin_b_record_early();

TEST_CASE("shared objects with hidden visibility share one state and write into one trace") {
  test::temp_dir dir;
  auto t = test::record(test::config_in(dir), [] {
    npuprof::mark<kernels>("mark in main");
    plugin_a_record();
    plugin_b_record();
    CHECK(plugin_a_state() == &npuprof::detail::markers());
    CHECK(plugin_b_state() == &npuprof::detail::markers());
    // One buffer per thread, whoever records.
    CHECK(plugin_a_thread_buffer() == npuprof::detail::t_buffer);
    CHECK(plugin_b_thread_buffer() == npuprof::detail::t_buffer);
  });
  CHECK(t.count("mark in main") == 1);
  CHECK(t.count("range in plugin_a", "X") == 1);
  CHECK(t.count("range in plugin_b", "X") == 1);
  CHECK(t.count("mark in plugin_a", "i") == 1);
  CHECK(t.count("mark in plugin_b", "i") == 1);
  CHECK(t.count("plugin counter", "C") == 2);
  CHECK(t.named("process_name", "M").size() == 1);
}

TEST_CASE("strings registered and a thread named before the control side is installed are kept") {
  // The plugins made them while they loaded, before this program's own
  // static initialisation installed the control table: pending ids.
  CHECK((plugin_a_early_string_id() & npuprof::detail::pending_string_bit) != 0);
  CHECK((plugin_b_early_string_id() & npuprof::detail::pending_string_bit) != 0);
  CHECK(plugin_a_early_string_id() != plugin_b_early_string_id());
  test::temp_dir dir;
  auto t = test::record(test::config_in(dir), [] {
    plugin_a_record_early();
    plugin_b_record_early();
  });
  CHECK(t.count("registered early in plugin_a", "X") == 1);
  CHECK(t.count("registered early in plugin_b", "X") == 1);
  // Both plugins named this thread while loading; the later name stands.
  const auto names = t.named("thread_name", "M");
  bool found = false;
  for (const auto& e : names) {
    const std::string n = e["args"]["name"].get<std::string>();
    if (n.rfind("named early in plugin_", 0) == 0) found = true;
  }
  CHECK(found);
}
