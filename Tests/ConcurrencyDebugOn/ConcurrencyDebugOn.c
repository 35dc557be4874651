// Turns on Core Data's concurrency debugging in every process this target is linked into (the
// test suite), before any Swift code runs: the suite then proves the queue confinement that the
// library's unchecked annotations assume. Setting OPENCOREDATA_CONCURRENCY_DEBUG=0 beforehand
// turns it off.
#include <stdlib.h>
#include "ConcurrencyDebugOn.h"

__attribute__((constructor))
static void turnOnConcurrencyDebugging(void) {
    setenv("OPENCOREDATA_CONCURRENCY_DEBUG", "1", 0);
}

int ocd_concurrency_debug_on_linked = 1;
