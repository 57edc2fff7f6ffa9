/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the vars= list of plugstack.conf, parsed and validated. */
#ifndef EXTC_CONFIG_VARS_H_
#define EXTC_CONFIG_VARS_H_

#include <stddef.h>

#include "base/vars.h"

/*
 * Parse vars= ("NAME[:SUBDIR],..."), each name checked against the
 * variables the job or the plugin itself needs, into 'vars' (at most
 * EXTC_VARS_MAX). -1 with 'why' on the first bad entry.
 */
int extc_config_vars_parse(const char *list, struct extc_var *vars, size_t *nvars,
			   char *why, size_t whylen);

#endif /* EXTC_CONFIG_VARS_H_ */
