// npuprof: mstx-style markers for Ascend NPU code. Include this header only.
//
//     struct kernels { static constexpr const char* name = "kernels"; };
//
//     npuprof::session s{npuprof::config::from_env()};
//     s.start();
//     {
//       NPUPROF_RANGE(kernels, "gemm");
//       npuprof::mark("checkpoint");
//     }
//     s.stop();  // writes {host}_{pid}_{time}_npuprof/trace_view.json
#pragma once

#include "clock.hpp"
#include "config.hpp"
#include "counter.hpp"
#include "domain.hpp"
#include "error.hpp"
#include "filter.hpp"
#include "macros.hpp"
#include "mark.hpp"
#include "naming.hpp"
#include "range.hpp"
#include "registered_string.hpp"
#include "session.hpp"
#include "stream.hpp"
#include "version.hpp"
