/*
 * switch.c -- the CPUPROFILESIGNAL handler, the one function of the
 * gperftools drop-in that runs in signal context: it counts the delivery
 * and wakes the switch thread (toggle.c) with a futex, keeping errno.  No
 * file descriptor is involved, so a program that closes every descriptor
 * (daemons do) cannot make the handler write into one of its files.  It
 * includes nothing else of ours; `make check-sigsafe` checks what it
 * calls.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "switch.h"

_Atomic unsigned gpt_switch_count;

/* Signal context. */
void gpt_switch_handler(int sig)
{
	int e = errno;
	atomic_fetch_add_explicit(&gpt_switch_count, 1, memory_order_release);
	syscall(SYS_futex, &gpt_switch_count, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	errno = e;
}
