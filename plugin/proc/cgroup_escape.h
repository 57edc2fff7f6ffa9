/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: take a detached root process out of the Slurm job's cgroups. */
#ifndef EXTC_CGROUP_ESCAPE_H_
#define EXTC_CGROUP_ESCAPE_H_

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * A process forked by slurmstepd inherits the step's cgroups: under
 * proctrack/cgroup it is killed with the step (the freezer or cgroup.kill
 * of the job) and under task/cgroup its memory and CPU are charged to the
 * job. Work that must outlive the job leaves them first.
 */
enum extc_cgroup_result {
	EXTC_CGROUP_NOT_IN_JOB,	/* in no job's cgroup on any hierarchy: nothing was done */
	EXTC_CGROUP_MOVED,	/* moved out on every hierarchy where it was in a job */
	EXTC_CGROUP_PARTIAL,	/* moved out on some of them, still in the job on others */
	EXTC_CGROUP_FAILED,	/* still in the job everywhere, or its cgroups could not be read */
};

/* What extc_cgroup_escape_target found in one cgroup path. */
enum extc_cgroup_where {
	EXTC_CGROUP_OUTSIDE,	/* no Slurm job in the path */
	EXTC_CGROUP_IN_JOB,	/* in a job: the target was written */
	EXTC_CGROUP_BAD_PATH,	/* not absolute, a "." or ".." in it, or too long */
};

/* One hierarchy on which the process is in a job (cgroup v1: a controller's, v2: the unified one). */
struct extc_cgroup_move {
	char hierarchy[64];	/* its controllers as /proc/self/cgroup lists them, or "unified" */
	char from[PATH_MAX];	/* the job's cgroup the process is in, as /proc/self/cgroup names it */
	char to[PATH_MAX];	/* where it goes, in the same hierarchy */
	char procs[PATH_MAX];	/* <mount point><to>/cgroup.procs; "" when it cannot be moved */
	char why[256];		/* why not, when procs is "" */
};

/* v1 has at most 16 controllers and a few named hierarchies; v2 one */
#define EXTC_CGROUP_MAX 32

struct extc_cgroup_plan {
	size_t n;		/* hierarchies on which the process is in a job */
	struct extc_cgroup_move moves[EXTC_CGROUP_MAX];
};

/*
 * Where a process in cgroup 'path' goes to be out of any Slurm job: the
 * nearest ancestor above the job's first component (cgroup/v1's
 * uid_U/job_J, cgroup/v2's job_J or, from 26.05, the job's SLUID right
 * under a slurmstepd scope). On cgroup v2 ('v2' true) a cgroup with
 * processes cannot have controllers enabled for children, so when that
 * ancestor is the slurmstepd scope the target is its "system" leaf, where
 * Slurm keeps its own daemons. Pure: nothing is read.
 */
enum extc_cgroup_where extc_cgroup_escape_target(const char *path, int v2, char *out, size_t outlen);

/*
 * From the texts of /proc/self/cgroup and /proc/self/mountinfo, the
 * hierarchies on which the process is in a job, each with the cgroup.procs
 * file to write to (the first mount of that hierarchy whose root holds
 * both the job's cgroup and the target). Lines that are too long, or
 * malformed, are passed over. Pure: nothing is read.
 */
void extc_cgroup_escape_plan(const char *cgroup_text, const char *mountinfo_text,
			     struct extc_cgroup_plan *plan);

/*
 * Carry out a plan for process 'pid': write it into each move's
 * cgroup.procs, opened with O_NOFOLLOW. 'why' tells what was moved where,
 * and what failed.
 */
enum extc_cgroup_result extc_cgroup_escape_apply(const struct extc_cgroup_plan *plan, pid_t pid,
						 char *why, size_t whylen);

/*
 * The calling process (root, in slurmstepd's detached child) leaves the
 * job's cgroups on every hierarchy: /proc/self/cgroup and
 * /proc/self/mountinfo read, planned and applied.
 */
enum extc_cgroup_result extc_cgroup_escape(char *why, size_t whylen);

/* The same from other files (tests): their texts stand for /proc/self's. */
enum extc_cgroup_result extc_cgroup_escape_from(const char *cgroup_file,
						const char *mountinfo_file, pid_t pid,
						char *why, size_t whylen);

/* "not-in-job", "moved", "partial", "failed" */
const char *extc_cgroup_escape_result_name(enum extc_cgroup_result r);

#endif /* EXTC_CGROUP_ESCAPE_H_ */
