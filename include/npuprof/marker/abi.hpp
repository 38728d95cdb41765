// npuprof's ABI version: every npuprof name lives in an inline namespace
// named after it, so that modules built against incompatible versions do not
// share process-wide state with two layouts; the version is also recorded
// process-wide (abi_check.hpp), so that such a module is told, not ignored.
//
// Raise NPUPROF_ABI_VERSION whenever the layout of anything shared between
// modules changes: the marker state, thread buffers, chunks, records, the
// control table. (A test builds a module with another value.)
#pragma once

#ifndef NPUPROF_ABI_VERSION
#define NPUPROF_ABI_VERSION 2
#endif

#define NPUPROF_DETAIL_ABI_CAT2(a, b) a##b
#define NPUPROF_DETAIL_ABI_CAT(a, b) NPUPROF_DETAIL_ABI_CAT2(a, b)
#define NPUPROF_ABI_BEGIN inline namespace NPUPROF_DETAIL_ABI_CAT(abi_v, NPUPROF_ABI_VERSION) {
#define NPUPROF_ABI_END }
