// EXPECT: npuprof: a domain is a type with a compile-time name
#include <npuprof/npuprof.hpp>
struct runtime_named {
  static const char* name;  // not usable at compile time
};
void f() { npuprof::scoped_range<runtime_named> r{"x"}; }
