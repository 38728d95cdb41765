// With -DNPUPROF_DISABLE the marker macros do not evaluate their arguments.
#include <doctest/doctest.h>

extern "C" int disable_macro_side_effects();

TEST_CASE("disabled macros evaluate none of their arguments") { CHECK(disable_macro_side_effects() == 0); }
