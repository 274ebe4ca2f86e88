/* Compiled with -std=c11 -pedantic -Werror: the public headers need nothing
 * beyond standard C (no extensions, no GNU-only constructs). */
#include "ferry/ferry.h"
#include "ferry/ferry_it.h"

int ferry_header_only_probe(void);
int ferry_header_only_probe(void) { return (int)sizeof(struct ArrowDeviceArray); }
