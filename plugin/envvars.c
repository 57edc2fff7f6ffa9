/* spank-ext-cache: which cache variables a step gets, and what happens to values already set. */
#include <stddef.h>

#include "envvars.h"
#include "text.h"

enum extc_var_action extc_var_decide(const char *current, bool user_asked,
				     const char *managed_prefix)
{
	if (current == NULL || current[0] == '\0')
		return (EXTC_VAR_SET);
	if (extc_has_prefix(current, managed_prefix))
		return (EXTC_VAR_REPLACE_OURS);
	if (user_asked)
		return (EXTC_VAR_REPLACE_USER);
	return (EXTC_VAR_KEEP_USER);
}

const char *extc_var_action_name(enum extc_var_action action)
{
	switch (action) {
	case EXTC_VAR_SET:
		return ("set");
	case EXTC_VAR_KEEP_USER:
		return ("kept the user's value");
	case EXTC_VAR_REPLACE_USER:
		return ("replaced the user's value");
	case EXTC_VAR_REPLACE_OURS:
		return ("replaced the enclosing step's value");
	}
	return ("?");
}
