/*
 * switch.h -- the CPUPROFILESIGNAL handler (signal context, switch.c).
 */
#ifndef GPT_SWITCH_H
#define GPT_SWITCH_H

/* Deliveries so far; the switch thread waits on it as a futex. */
extern _Atomic unsigned gpt_switch_count;

/* Signal context: counts a delivery and wakes the switch thread; errno
 * kept. */
void gpt_switch_handler(int sig);

#endif
