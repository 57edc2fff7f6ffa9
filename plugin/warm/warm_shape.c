/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what an entry of a JIT cache is, by its name and where it sits: the one classification every walk uses. */
#include <string.h>

#include "base/fdio.h"
#include "base/text.h"
#include "warm/warm_ninja.h"
#include "warm/warm_shape.h"
#include "warm/warm_triton.h"

enum extc_warm_name extc_shape_name_rule(const char *name, bool inductor_level)
{
	if (extc_fdio_is_dot(name))
		return (EXTC_NAME_SKIP);
	if (strcmp(name, EXTC_WARM_LOCK_NAME) == 0 ||
	    (inductor_level && strcmp(name, EXTC_WARM_INDUCTOR_LOCKS) == 0))
		return (EXTC_NAME_LOCK);
	return (extc_has_prefix(name, EXTC_OWN_PREFIX) ? EXTC_NAME_SKIP : EXTC_NAME_COPY);
}

static bool is(const char *subdir, const char *name)
{
	return (subdir != NULL && strcmp(name, subdir) == 0);
}

enum extc_shape extc_shape_of_subdir(const struct extc_warm_opts *o, const char *subdir)
{
	if (is(o->torch_subdir, subdir))
		return (EXTC_SHAPE_TORCH);
	if (is(o->inductor_subdir, subdir))
		return (EXTC_SHAPE_INDUCTOR);
	if (is(o->triton_subdir, subdir))
		return (EXTC_SHAPE_TRITON);
	return (EXTC_SHAPE_PLAIN);
}

enum extc_shape extc_shape_of_child(const struct extc_warm_opts *o, enum extc_shape parent,
				    int childfd, const char *name)
{
	enum extc_ext_state state;

	switch (parent) {
	case EXTC_SHAPE_LEAF:
		return (extc_shape_of_subdir(o, name));
	case EXTC_SHAPE_TORCH:
	case EXTC_SHAPE_TORCH_GROUP:
		state = extc_warm_ninja_ext_state(childfd);
		if (state == EXTC_EXT_COMPLETE)
			return (EXTC_SHAPE_TORCH_BUILD);
		/* torch >= 1.9 groups builds by Python and CUDA version, one level down */
		if (state == EXTC_EXT_NONE && parent == EXTC_SHAPE_TORCH &&
		    extc_warm_ninja_is_pyver_group(name))
			return (EXTC_SHAPE_TORCH_GROUP);
		return (EXTC_SHAPE_INCOMPLETE);
	case EXTC_SHAPE_TRITON:
		/* a group file that does not parse, or names a missing file, is a miss anyway */
		return (extc_triton_check(childfd) == EXTC_TRITON_BROKEN ? EXTC_SHAPE_INCOMPLETE :
									   EXTC_SHAPE_TRITON_KERNEL);
	default:
		return (EXTC_SHAPE_PLAIN);
	}
}
