// EXPECT: npuprof: a counter value must be an integer or floating-point number
#include <npuprof/npuprof.hpp>
void f() { npuprof::counter("x", "not a number"); }
