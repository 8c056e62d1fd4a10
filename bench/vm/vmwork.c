/*
 * vmwork.c -- the program the profilers run in the tick-bound VM: the
 * workload of workload.h, its ground truth printed on stdout.
 *
 *   vmwork [-t THREADS] [-p busy|sleepy] [-s CPU_S_PER_THREAD] [-u UNIT_US] [-z SLEEP_US]
 */
#include "workload.h"

int main(int argc, char **argv)
{
	struct wl_config c;
	struct wl_result r;
	if (wl_parse(argc, argv, &c) < 0)
		return 2;
	if (wl_run(&c, &r) < 0)
		return 1;
	wl_print(stdout, &c, &r);
	return 0;
}
