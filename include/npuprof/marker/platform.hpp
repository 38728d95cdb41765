// Compiler and platform helpers shared by every npuprof header.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define NPUPROF_LIKELY(x) __builtin_expect(!!(x), 1)
#define NPUPROF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NPUPROF_ALWAYS_INLINE inline __attribute__((always_inline))
#define NPUPROF_COLD __attribute__((cold, noinline))
// Out of line, yet optimized for speed as cold code is not: a path taken
// often enough to matter, kept out of its caller's way.
#define NPUPROF_NOINLINE __attribute__((noinline))
// After a lambda's parameters: the loop that calls it for each record gets
// its body, not a call.
#define NPUPROF_INLINE_LAMBDA __attribute__((always_inline))
// State that must be unique in the process even when several shared objects
// include the headers with -fvisibility=hidden: giving these symbols default
// visibility lets the dynamic linker merge them into one.
#define NPUPROF_PROCESS_WIDE __attribute__((visibility("default")))
#else
#define NPUPROF_LIKELY(x) (x)
#define NPUPROF_UNLIKELY(x) (x)
#define NPUPROF_ALWAYS_INLINE inline
#define NPUPROF_COLD
#define NPUPROF_NOINLINE
#define NPUPROF_INLINE_LAMBDA
#define NPUPROF_PROCESS_WIDE
#endif

#define NPUPROF_DETAIL_CAT2(a, b) a##b
#define NPUPROF_DETAIL_CAT(a, b) NPUPROF_DETAIL_CAT2(a, b)
#define NPUPROF_DETAIL_STR2(...) #__VA_ARGS__
#define NPUPROF_DETAIL_STR(...) NPUPROF_DETAIL_STR2(__VA_ARGS__)
