#ifndef CONCURRENCY_DEBUG_ON_H
#define CONCURRENCY_DEBUG_ON_H

/// Set to 1 by this target: a symbol the test suite can reference to keep the target linked.
extern int ocd_concurrency_debug_on_linked;

#endif
