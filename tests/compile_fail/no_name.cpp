// EXPECT: npuprof: a domain is a type with a compile-time name
#include <npuprof/npuprof.hpp>
struct not_a_domain {};
void f() { npuprof::mark<not_a_domain>("x"); }
