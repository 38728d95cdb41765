// A program that uses an installed (or subproject) npuprof.
#define NPUPROF_IMPLEMENTATION  // the one file that compiles the implementation
#include <npuprof/session.hpp>

#include <cstdio>

struct app_domain {
  static constexpr const char* name = "app";
};

int main(int argc, char** argv) {
  npuprof::config cfg;
  cfg.output_dir = argc > 1 ? argv[1] : ".";
  npuprof::session s{cfg};
  s.start();
  {
    NPUPROF_RANGE(app_domain, "consumer range");
    npuprof::mark("consumer mark");
  }
  std::printf("%s\n", s.stop().c_str());
  return 0;
}
