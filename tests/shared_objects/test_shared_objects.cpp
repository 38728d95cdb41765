// Two shared objects built with -fvisibility=hidden and the program itself
// all include the headers: there is one npuprof state, one session, one trace.
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

TEST_CASE("shared objects with hidden visibility share one state and write into one trace") {
  test::temp_dir dir;
  auto t = test::record(test::config_in(dir), [] {
    npuprof::mark<kernels>("mark in main");
    plugin_a_record();
    plugin_b_record();
    CHECK(plugin_a_state() == &npuprof::detail::state());
    CHECK(plugin_b_state() == &npuprof::detail::state());
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
