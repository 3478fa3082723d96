/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Pre-placement advice on the command line, as `numad -w` gives it (what
 * libvirt's placement='auto' runs): `numaplaced --advise CPUS[:MB]` and the
 * `numad` compatibility command print one node list ("2-3,6") and a newline
 * on standard output and exit 0. The running daemon is asked over the
 * system bus (Advise(), which holds the answer as a reservation); when none
 * runs, the machine is sampled here (two samples one second apart) and the
 * same policy answers.
 *
 * Neither ever blocks its caller (libvirt waits for numad without a
 * timeout): the daemon has NP_ADVISE_BUS_TIMEOUT_USEC to answer (a daemon
 * that owns the bus name but does not answer is an error, not a reason to
 * sample), sampling is cut short to stay within the limit, and whatever
 * happens the command exits 1 with a message NP_ADVISE_LIMIT_USEC after it
 * started (numaplaced(8), "Advice for jobs not started yet").
 */
#include <glib.h>

#define NP_ADVISE_LIMIT_SEC 5
#define NP_ADVISE_LIMIT_USEC (NP_ADVISE_LIMIT_SEC * G_USEC_PER_SEC)
#define NP_ADVISE_BUS_TIMEOUT_USEC (2 * G_USEC_PER_SEC)
#define NP_ADVISE_SAMPLE_USEC G_USEC_PER_SEC

/* Parse "CPUS[:MB]" (numad -w syntax: CPUs a whole or decimal number, MB a
 * whole number of mebibytes). 0, or -EINVAL. */
int np_advise_parse(const char *arg, double *cpus, unsigned long long *mb);

/*
 * Print the advice for `arg` ("CPUS[:MB]") and return the exit status: 0
 * with the node list on stdout; 2 for a malformed argument, 1 when no
 * advice can be given in time (a message on stderr either way). config_file is the
 * configuration for local sampling (TargetUtilization, ReservedCPUs).
 */
int np_advise_main(const char *arg, const char *config_file);

/*
 * The `numad` compatibility command (installed with -Dnumad_compat=true as a
 * link named numad): answers `numad -w CPUS[:MB]` like np_advise_main() and
 * refuses every other numad option with a message naming numaplaced.
 * Returns the exit status.
 */
int np_numad_compat_main(int argc, char **argv, const char *config_file);
