/*
 * choose.h -- the list of engines and the choice among them: the one
 * asked for, or for "auto" the first that works here, best first, with
 * the reason each better one was not taken.  Not signal context.
 */
#ifndef CPUPROF_ENGINES_H
#define CPUPROF_ENGINES_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* The engine named `want` ("auto" or an engine's name) and its signal in
 * *signo (signal engines; `asked` if not 0), probed with `period_ns` on a
 * kernel whose timers have resolution timer_res_ns.  The reasons why each
 * engine tried before it was not taken go into why[len] ("" if none).
 * NULL if none works. */
const struct cp_engine *cp_engine_choose(const char *want, int asked, uint64_t period_ns, long timer_res_ns,
					 int *signo, char *why, size_t len);

#endif
