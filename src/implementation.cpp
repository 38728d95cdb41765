// The control header's implementation, compiled once for the programs built
// here (tests, examples, benchmarks). A program of its own compiles it the
// same way, in the one file that defines NPUPROF_IMPLEMENTATION.
#define NPUPROF_IMPLEMENTATION
#include <npuprof/session.hpp>
