/*
 * sampling_signal.h -- the sampling signal of the timer and itimer
 * engines: which signals may be used, choosing one, taking it for the
 * handler and giving it back.  The program keeps its own disposition of the signal
 * throughout (src/sig/sigprog.h): cpuprof's handler stays installed once
 * a profile has used the signal, passing every delivery that is not ours
 * to what the program set.  Not signal context.
 */
#ifndef CPUPROF_SAMPLING_SIGNAL_H
#define CPUPROF_SAMPLING_SIGNAL_H

#include <stddef.h>

#include "engine.h"

/* The signal engine e would use: `asked` if given, else SIGPROF, else
 * (the program handles SIGPROF itself) a free real-time signal, searched
 * from below `below` (0: from SIGRTMAX) downwards.  0 with the reason in
 * why[len] if there is none. */
int cp_signal_choose(const struct cp_engine *e, int asked, int below, char *why, size_t len);

/* Installs the handler for signo (every signal blocked while it runs) and
 * makes cpuprof keep the program's disposition of it from now on.
 * Returns 0 or a negative errno. */
int cp_signal_take(int signo);

/* After the engine stopped and no handler runs: drops instances of signo
 * still pending in the calling thread and for the process, and sets the
 * kernel's disposition for what the program wants (ours, passing
 * everything on; or SIG_IGN if that is what it wants). */
void cp_signal_release(int signo);

/* Sets the kernel's disposition of a managed signal for the program's
 * current wish (ours while sampling with it; SIG_IGN when the program
 * ignores it and no profile samples with it; ours otherwise). */
void cp_signal_apply(int signo);

/* The signal a profile is sampling with right now, or 0. */
int cp_signal_sampling(void);

/* Removes every pending instance of signo from the calling thread and the
 * process (before exec: the new image would meet its default action). */
void cp_signal_discard_pending(int signo);

#endif
