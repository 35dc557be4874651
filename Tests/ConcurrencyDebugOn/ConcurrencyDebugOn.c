// Linked into the test suite, and run before any Swift code does:
// - turns on Core Data's concurrency debugging, so that the suite proves the queue confinement
//   that the library's unchecked annotations assume (OPENCOREDATA_CONCURRENCY_DEBUG=0 set
//   beforehand turns it off);
// - installs the suite's log handler (OpenCoreDataTestKit's TestLogging), which keeps the log
//   lines that tests of failures cause out of the output.
#include <stdlib.h>
#include "ConcurrencyDebugOn.h"

extern void ocd_install_test_logging(void) __attribute__((weak));

__attribute__((constructor))
static void prepareTestProcess(void) {
    setenv("OPENCOREDATA_CONCURRENCY_DEBUG", "1", 0);
    if (ocd_install_test_logging) ocd_install_test_logging();
}

int ocd_concurrency_debug_on_linked = 1;
