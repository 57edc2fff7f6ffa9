/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: which names of a cache tree are never copied, and the names the plugin makes. */
#include <string.h>

#include "base/fdio.h"
#include "base/text.h"
#include "warm/warm_names.h"

enum extc_warm_name extc_warm_name_rule(const char *name, bool inductor_level)
{
	if (extc_fdio_is_dot(name))
		return (EXTC_NAME_SKIP);
	if (strcmp(name, EXTC_WARM_LOCK_NAME) == 0 ||
	    (inductor_level && strcmp(name, EXTC_WARM_INDUCTOR_LOCKS) == 0))
		return (EXTC_NAME_LOCK);
	return (extc_has_prefix(name, EXTC_OWN_PREFIX) ? EXTC_NAME_SKIP : EXTC_NAME_COPY);
}
