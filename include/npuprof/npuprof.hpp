// npuprof: mstx-style markers for Ascend NPU code. The marker header: what
// instrumented code includes. It brings only standard headers and npuprof's
// marker layer (no JSON, formatting or Boost), so that it costs every
// instrumented file about what nvtx3.hpp does.
//
//     struct kernels { static constexpr const char* name = "kernels"; };
//
//     void gemm(npuprof::stream_t stream) {
//       NPUPROF_RANGE(kernels, "gemm", stream);
//       npuprof::mark("checkpoint");
//     }
//
// Recording happens while a session runs: the file that starts profiling
// includes the control header, <npuprof/session.hpp>.
#pragma once

#include "clock.hpp"
#include "counter.hpp"
#include "domain.hpp"
#include "filter.hpp"
#include "macros.hpp"
#include "mark.hpp"
#include "naming.hpp"
#include "range.hpp"
#include "registered_string.hpp"
#include "stream.hpp"
#include "version.hpp"
