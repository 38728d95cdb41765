#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

// Set in forked children that end with exit(): they leave the test's locals
// behind on purpose, so LeakSanitizer (when present) skips its check there.
bool test_in_forked_child = false;
extern "C" int __lsan_is_turned_off() { return test_in_forked_child ? 1 : 0; }
