/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the cache modes a job can ask for, and their validation. */
#include <string.h>

#include "base/mode.h"
#include "base/text.h"

static const char *const mode_names[] = {
	[EXTC_MODE_OFF] = "off",
	[EXTC_MODE_LOCAL] = "local",
	[EXTC_MODE_JOB] = "job",
};

#define MODE_COUNT (sizeof(mode_names) / sizeof(mode_names[0]))

const char *extc_mode_name(enum extc_mode mode)
{
	if ((size_t)mode >= MODE_COUNT)
		return ("?");
	return (mode_names[mode]);
}


int extc_mode_parse(const char *value, const char *what, enum extc_mode *mode,
		    char *why, size_t whylen)
{
	char shown[96];
	const char *hint = NULL;

	if (value != NULL && strnlen(value, EXTC_MODE_VALUE_MAX + 1) <= EXTC_MODE_VALUE_MAX) {
		size_t best = 3;

		for (size_t i = 0; i < MODE_COUNT; i++) {
			size_t dist;

			if (strcmp(value, mode_names[i]) == 0) {
				*mode = (enum extc_mode)i;
				return (0);
			}
			dist = extc_text_edit_distance(value, mode_names[i]);
			if (dist < best) {
				best = dist;
				hint = mode_names[i];
			}
		}
	}
	extc_escape(value, 40, shown, sizeof(shown));
	if (value != NULL && value[0] == '\0')
		extc_fmt(why, whylen, "%s: empty value: valid modes are %s",
			 what, EXTC_MODE_LIST);
	else if (hint != NULL)
		extc_fmt(why, whylen, "%s=%s: invalid mode (did you mean '%s'?): valid modes are %s",
			 what, shown, hint, EXTC_MODE_LIST);
	else
		extc_fmt(why, whylen, "%s=%s: invalid mode: valid modes are %s",
			 what, shown, EXTC_MODE_LIST);
	return (-1);
}

int extc_mode_resolve(const char *option_value, const char *env_value,
		      enum extc_mode default_mode, struct extc_choice *choice,
		      char *why, size_t whylen)
{
	choice->mode = default_mode;
	choice->user_asked = false;
	choice->source = "default";
	if (option_value != NULL) {
		choice->user_asked = true;
		choice->source = "--ext-cache";
		/* sbatch hands SLURM_EXT_CACHE on as the option: name it as the user gave it */
		if (env_value != NULL && strcmp(option_value, env_value) == 0)
			choice->source = EXTC_ENV_REQUEST_NAME;
		return (extc_mode_parse(option_value, choice->source, &choice->mode, why, whylen));
	}
	if (env_value != NULL) {
		choice->user_asked = true;
		choice->source = EXTC_ENV_REQUEST_NAME;
		return (extc_mode_parse(env_value, EXTC_ENV_REQUEST_NAME, &choice->mode, why,
					whylen));
	}
	return (0);
}
