// LTTng-UST tracepoints for the peer rows of the overhead benchmark: the
// begin and end of a range, each with a registered name's number, the
// cheapest form LTTng offers for what npuprof's registered scoped range does.
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER npuprof_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./lttng_tp.h"

#if !defined(NPUPROF_BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define NPUPROF_BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(npuprof_bench, range_begin, LTTNG_UST_TP_ARGS(unsigned int, name),
                           LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(unsigned int, name, name)))

LTTNG_UST_TRACEPOINT_EVENT(npuprof_bench, range_end, LTTNG_UST_TP_ARGS(unsigned int, name),
                           LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(unsigned int, name, name)))

#endif

#include <lttng/tracepoint-event.h>
