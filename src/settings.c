/*
 * settings.c -- cpuprof_check_setting(): one setting, given as text,
 * checked by the table cpuprof_start() checks its options with
 * (src/profile/options.h).  What the gperftools drop-in, built on the
 * public API alone, reads its environment's values with, so that it
 * takes what the library would and refuses what the library would.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cpuprof.h"
#include "base/error.h"
#include "profile/options.h"

int cpuprof_check_setting(const char *name, const char *value, char *why, size_t len)
{
	char reason[256];
	long v;
	int rc = -ENOENT;
	cp_error_begin();
	snprintf(reason, sizeof reason, "'%s' is not a setting of cpuprof's", name ? name : "(null)");
	for (size_t i = 0; name && i < CP_NOPTIONS; i++)
		if (strcmp(cp_options[i].name, name) == 0)
			rc = cp_option_parse(&cp_options[i], value ? value : "", &v, reason, sizeof reason) == 0 ? 0
														 : -EINVAL;
	if (rc < 0 && why && len)
		snprintf(why, len, "%s", reason);
	return cp_error_end(rc, reason);
}
