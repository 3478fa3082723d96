/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-maps-refresh.h"

NpMapsDue np_maps_refresh_due(const NpMapsAge *a, uint64_t rss_bytes, uint64_t cpu_ticks, unsigned max_scans,
                              bool settled) {
        if (!a->valid)
                return NP_MAPS_DUE_NEW;
        uint64_t base = a->rss_bytes;
        uint64_t diff = rss_bytes > base ? rss_bytes - base : base - rss_bytes;
        /* diff / base > P / 100, without division or overflow (RSS < 2^57) */
        if (base == 0 ? diff > 0 : diff * 100u > base * (uint64_t) NP_MAPS_RSS_CHANGE_PERCENT)
                return NP_MAPS_DUE_RSS;
        if (cpu_ticks == a->cpu_ticks) /* it did not run since: its pages stayed */
                return NP_MAPS_KEEP;
        if (settled) /* they can only be where they were */
                return NP_MAPS_KEEP;
        if ((uint64_t) a->scans + 1 >= (max_scans ? max_scans : 1))
                return NP_MAPS_DUE_AGE;
        return NP_MAPS_KEEP;
}

void np_maps_age_read(NpMapsAge *a, uint64_t rss_bytes, uint64_t cpu_ticks, uint64_t realtime_usec) {
        a->valid = true;
        a->rss_bytes = rss_bytes;
        a->cpu_ticks = cpu_ticks;
        a->scans = 0;
        a->read_usec = realtime_usec;
        a->starting = false;
}

void np_maps_age_scan(NpMapsAge *a) {
        if (a->scans < UINT32_MAX)
                a->scans++;
}

void np_maps_age_invalidate(NpMapsAge *a) {
        a->valid = false;
        a->scans = 0;
}

const char *np_maps_due_to_string(NpMapsDue d) {
        switch (d) {
        case NP_MAPS_KEEP:
                return "keep";
        case NP_MAPS_DUE_NEW:
                return "new";
        case NP_MAPS_DUE_RSS:
                return "rss";
        case NP_MAPS_DUE_AGE:
                return "age";
        }
        return "?";
}

bool np_details_due(const NpDetailsAge *a, uint64_t cpu_ticks, unsigned threads, unsigned max_scans) {
        if (!a->valid || cpu_ticks != a->cpu_ticks || threads != a->threads)
                return true;
        return (uint64_t) a->scans + 1 >= (max_scans ? max_scans : 1);
}

void np_details_age_read(NpDetailsAge *a, uint64_t cpu_ticks, unsigned threads) {
        a->valid = true;
        a->cpu_ticks = cpu_ticks;
        a->threads = threads;
        a->scans = 0;
}

void np_details_age_scan(NpDetailsAge *a) {
        if (a->scans < UINT32_MAX)
                a->scans++;
}

void np_details_age_invalidate(NpDetailsAge *a) {
        a->valid = false;
        a->scans = 0;
}
