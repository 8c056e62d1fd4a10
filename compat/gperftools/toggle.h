/*
 * toggle.h -- CPUPROFILESIGNAL, the switch (toggle.c): above the profile
 * (gp_session.h), whose starts and stops it calls.
 */
#ifndef GPT_TOGGLE_H
#define GPT_TOGGLE_H

/* Installs the CPUPROFILESIGNAL handler for the signal named by `value`
 * and starts the switch thread (and, in a forked child, the child's
 * own).  Returns 0, or -1 after one warning. */
int gpt_toggle_init(const char *value);

#endif
