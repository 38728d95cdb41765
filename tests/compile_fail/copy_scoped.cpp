// EXPECT: deleted
#include <npuprof/npuprof.hpp>
void f() {
  npuprof::scoped_range<> a{"x"};
  npuprof::scoped_range<> b{a};
}
