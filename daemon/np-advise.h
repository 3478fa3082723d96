/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Pre-placement advice on the command line, as `numad -w` gives it (what
 * libvirt's placement='auto' runs): `numaplaced --advise CPUS[:MB]` and the
 * `numad` compatibility command print one node list ("2-3,6") and a newline
 * on standard output and exit 0. The running daemon is asked over the
 * system bus (Advise()); when none runs, the machine is sampled here (two
 * samples one second apart) and the same policy answers.
 */

/* Parse "CPUS[:MB]" (numad -w syntax: CPUs a whole or decimal number, MB a
 * whole number of mebibytes). 0, or -EINVAL. */
int np_advise_parse(const char *arg, double *cpus, unsigned long long *mb);

/*
 * Print the advice for `arg` ("CPUS[:MB]") and return the exit status: 0
 * with the node list on stdout; 2 for a malformed argument, 1 when no
 * advice can be given (a message on stderr either way). config_file is the
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
