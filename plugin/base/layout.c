/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: directory names of the per-node tree, built from integers only. */
#include <ctype.h>
#include <string.h>
#include <unistd.h>

#include "base/layout.h"
#include "base/text.h"

/* Slurm's NO_VAL and friends are never valid ids. */
#define ID_MAX 0xfffffff0u

int extc_layout_uid_name(uid_t uid, char *buf, size_t len)
{
	/* root's jobs are not managed: a bug yielding uid 0 must not produce a root tree */
	if (uid == 0 || (uint64_t)uid >= ID_MAX)
		return (-1);
	return (extc_fmt(buf, len, "%u", (unsigned)uid));
}

int extc_layout_job_name(uint32_t jobid, char *buf, size_t len)
{
	if (jobid == 0 || jobid >= ID_MAX)
		return (-1);
	return (extc_fmt(buf, len, "%u", jobid));
}

int extc_layout_leaf_name(enum extc_mode mode, uint32_t stepid, char *buf, size_t len)
{
	if (stepid == EXTC_STEP_EXTERN || stepid == EXTC_STEP_PENDING)
		return (-1);
	if (stepid > EXTC_STEP_MAX_NORMAL && stepid != EXTC_STEP_BATCH &&
	    stepid != EXTC_STEP_INTERACTIVE)
		return (-1);
	switch (mode) {
	case EXTC_MODE_JOB:
		return (extc_fmt(buf, len, "%s", EXTC_LEAF_JOB));
	case EXTC_MODE_LOCAL:
		if (stepid == EXTC_STEP_BATCH)
			return (extc_fmt(buf, len, "batch"));
		if (stepid == EXTC_STEP_INTERACTIVE)
			return (extc_fmt(buf, len, "interactive"));
		return (extc_fmt(buf, len, "%u", stepid));
	case EXTC_MODE_OFF:
	default:
		return (-1);
	}
}

int extc_layout_parse_uid_name(const char *name, uid_t *uid)
{
	uint32_t v;

	if (extc_parse_u32(name, ID_MAX - 1, &v) < 0 || v == 0)
		return (-1);
	*uid = (uid_t)v;
	return (0);
}

int extc_layout_parse_job_name(const char *name, uint32_t *jobid)
{
	if (extc_parse_u32(name, ID_MAX - 1, jobid) < 0 || *jobid == 0)
		return (-1);
	return (0);
}

int extc_layout_node_name(char *buf, size_t len)
{
	char host[256];
	size_t i;

	if (gethostname(host, sizeof(host)) < 0)
		return (-1);
	host[sizeof(host) - 1] = '\0';
	if (host[0] == '\0' || host[0] == '.' || strlen(host) > EXTC_NODE_NAME_MAX)
		return (-1);
	for (i = 0; host[i] != '\0'; i++) {
		if (!isalnum((unsigned char)host[i]) && host[i] != '-' && host[i] != '.' &&
		    host[i] != '_')
			return (-1);
	}
	return (extc_fmt(buf, len, "%s", host));
}
