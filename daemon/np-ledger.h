/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The placement policy's ledger (pure, used by np-policy.c only): every
 * node's CPU and memory capacity at TargetUtilization, what is used there,
 * its free hugetlb pages by page size, and the free memory that the moves
 * decided so far leave; and what a candidate process needs of it. The
 * policy takes the candidates out (np_ledger_remove_candidates()) and puts
 * each back where its decision puts it (np_ledger_footprint(),
 * np_ledger_commit()). Hugetlb pages count against their pools, never
 * against memory.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "np-nodemask.h"
#include "np-policy.h"

typedef struct {
        unsigned id;
        double cap_cpu, used_cpu; /* CPUs: at TargetUtilization, in use */
        double bg_cpu; /* of used_cpu, the background's (np_policy_background_cpu()) */
        double raw_cpu; /* CPUs of the node (ReservedCPUs out) */
        double phys_free; /* bytes free now for pages moved in, as the moves
                           * decided so far run one after the other */
        double cap_mem, used_mem; /* bytes */
        bool has_mem, has_cpu;
        const GArray *dist;
        uint64_t huge_size[NP_HUGE_SIZES_MAX]; /* the node's hugetlb pools: page size, */
        double huge_free[NP_HUGE_SIZES_MAX]; /* and bytes free in it */
        unsigned n_huge;
} NpLedgerSlot;

typedef struct {
        NpLedgerSlot *s;
        guint n;
        const NpPolicyParams *params;
        unsigned moves; /* np_ledger_move_pages() calls so far */
} NpLedger;

/* A ledger of `nodes` at params' TargetUtilization, from the samples (every
 * process counted where it is). Free l->s with g_free(). */
void np_ledger_init(NpLedger *l, const NpPolicyNode *nodes, guint n_nodes, const NpPolicyParams *params);
/* The background of a ledger fresh from np_ledger_init():
 * np_policy_background_cpu(). */
double np_ledger_background(const NpLedger *l, const NpPolicyProcess *procs, guint n_procs);
/* Take every candidate out: its pages from their nodes and its hugetlb pages
 * from their pools (but a moving one's huge pages, which the samples may
 * already show gone from there); the CPU use left (the background, the lower of this
 * round's and params->background_before) is spread over the nodes by their
 * CPUs. */
void np_ledger_remove_candidates(NpLedger *l, const NpPolicyProcess *procs, guint n_procs);

/* The slot of node id, NULL when the ledger has none. */
NpLedgerSlot *np_ledger_slot(const NpLedger *l, unsigned id);
/* The distance between two nodes (10 to itself, 20 when unknown). */
unsigned np_ledger_distance(const NpLedger *l, unsigned a, unsigned b);

/* What a process has and needs. Bytes on one node / on the nodes of set
 * (every page size). */
uint64_t np_ledger_bytes_on(const NpPolicyProcess *p, unsigned node);
uint64_t np_ledger_bytes_on_set(const NpPolicyProcess *p, const NpMask *set);
/* Its hugetlb bytes of one page size (0: of any size) on the nodes of set
 * (NULL: anywhere). */
uint64_t np_ledger_huge_in(const NpPolicyProcess *p, const NpMask *set, uint64_t page);
/* Its memory that is not in hugetlb pages: what counts against memory. */
uint64_t np_ledger_regular_mem(const NpPolicyProcess *p);
/* The CPUs it needs: what it uses, at most one per thread. */
double np_ledger_cpu_demand(const NpPolicyProcess *p);

/* The free bytes of a memory node's pool of one page size (0: none). */
double np_ledger_pool_free(const NpLedgerSlot *s, uint64_t page);
/* The first page size of p whose pages the pools of set (p not in the
 * ledger) cannot all take, 0 when they can. */
uint64_t np_ledger_pools_short(const NpLedger *l, const NpPolicyProcess *p, const NpMask *set);

/* Room in a set: memory on every node with memory, CPUs on every node with
 * CPUs (negative when over capacity); the capacities (may be NULL). */
void np_ledger_room(const NpLedger *l, const NpMask *set, double *mem, double *cpu, double *cap_mem, double *cap_cpu);
/* Would `mem` bytes and `cpu` CPUs fit on set with `margin` of its capacity
 * kept free (negative: allowed over)? A set whose confined load, and the
 * share of the background the rest of the machine has no room for, are
 * within the headroom TargetUtilization leaves may take a process that
 * fills all of its CPUs (one busy thread gets a one-CPU node to itself). */
bool np_ledger_fits(const NpLedger *l, const NpMask *set, double mem, double cpu, double margin);
/* Would p (not in the ledger) fit on set: its memory and CPUs by
 * np_ledger_fits(), its hugetlb pages in the set's pools? */
bool np_ledger_fits_process(const NpLedger *l, const NpMask *set, const NpPolicyProcess *p, double margin);
/* What set lacks for p (np_ledger_fits_process() said no), into *out. */
void np_ledger_shortage_process(const NpLedger *l, const NpMask *set, const NpPolicyProcess *p, double margin,
                                NpShortage *out);

/* Add (sign +1) or remove (-1) p's present footprint: where its pages and
 * CPU use are now. */
void np_ledger_footprint(NpLedger *l, const NpPolicyProcess *p, double sign);
/* Commit p on set: its pages already there stay, the rest spread by
 * capacity (hugetlb pages over the pools of their size); its CPU over the
 * set's CPU nodes by capacity, and the background of a set it fills past
 * capacity to the other CPU nodes' room. */
void np_ledger_commit(NpLedger *l, const NpPolicyProcess *p, const NpMask *set);
/* Commit p's memory on set as np_ledger_commit() does, its CPU use where it
 * runs now (a placement of its memory only). */
void np_ledger_commit_memory(NpLedger *l, const NpPolicyProcess *p, const NpMask *set);
/* Can p's pages that are not on set move there now, after the moves
 * decided before it (is that much memory free on its nodes)? */
bool np_ledger_movable(const NpLedger *l, const NpPolicyProcess *p, const NpMask *set);
/* The moves decided run one after the other, in the order of these calls
 * (l->moves counts them): after p's, its pages are on set and gone from its
 * other nodes. */
void np_ledger_move_pages(NpLedger *l, const NpPolicyProcess *p, const NpMask *set);
