/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: what an entry of a JIT cache is, by its name and where it sits: the one classification every walk uses. */
#ifndef EXTC_WARM_SHAPE_H_
#define EXTC_WARM_SHAPE_H_

#include <stdbool.h>

#include "warm/warm_names.h"
#include "warm/warm_opts.h"

/*
 * A seed's copy, a publish and the node pool's put-back walk the same
 * trees and must agree on what in them is a build: torch's level holds
 * whole extension directories, which go complete or not at all, Triton's
 * one directory per kernel whose group files name its files, Inductor's
 * everything but its locks, any other variable's everything.
 */
enum extc_shape {
	EXTC_SHAPE_LEAF,		/* the leaf, a seed or a published directory: one child per variable */
	EXTC_SHAPE_TORCH,		/* TORCH_EXTENSIONS_DIR: extension directories (or pyXY_cu groups) */
	EXTC_SHAPE_TORCH_GROUP,		/* torch_extensions/<pyver_cu>: extension directories */
	EXTC_SHAPE_TORCH_BUILD,		/* one complete extension directory: whole or not at all */
	EXTC_SHAPE_INDUCTOR,		/* TORCHINDUCTOR_CACHE_DIR: everything but its locks/ */
	EXTC_SHAPE_TRITON,		/* TRITON_CACHE_DIR: one directory per kernel */
	EXTC_SHAPE_TRITON_KERNEL,	/* a kernel's directory: its group files name its files by path */
	EXTC_SHAPE_PLAIN,		/* anything else: taken as it is */
	EXTC_SHAPE_INCOMPLETE,		/* a torch build without its .so or still locked, a Triton
					   kernel whose group file does not parse: left out */
};

/*
 * The one rule every seed, publish and put-back applies to every name it
 * meets: locks ("lock" anywhere, Inductor's locks/ in 'inductor_level',
 * the directory TORCHINDUCTOR_CACHE_DIR names) are never copied, nor are
 * the plugin's own EXTC_OWN_PREFIX names (manifest, stages, drafts).
 */
enum extc_warm_name extc_shape_name_rule(const char *name, bool inductor_level);

/* The shape of a variable's directory 'subdir' of the leaf (or of a seed). */
enum extc_shape extc_shape_of_subdir(const struct extc_warm_opts *o, const char *subdir);

/* The shape of the directory 'childfd', named 'name', in a directory of shape 'parent'. */
enum extc_shape extc_shape_of_child(const struct extc_warm_opts *o, enum extc_shape parent,
				    int childfd, const char *name);

#endif /* EXTC_WARM_SHAPE_H_ */
