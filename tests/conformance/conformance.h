/* The conformance mode of the host (`ferry_it_host conformance PLUGIN.so ...`):
 * one plugin checked against the contract of docs/cases.md, with the C
 * plugin as the reference (README.md). */
#ifndef FERRY_CONFORMANCE_CONFORMANCE_H
#define FERRY_CONFORMANCE_CONFORMANCE_H

/* Runs the suite; `argv` holds the arguments after "conformance" (the
 * plugin first). Prints FAIL lines and "N passed, N failed", then ends the
 * process (0 when nothing failed, else 1); returns 2 on a usage error and 1
 * when the plugins cannot be loaded. */
int conformance_main(int argc, char** argv);

#endif  // FERRY_CONFORMANCE_CONFORMANCE_H
