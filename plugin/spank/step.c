/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: one step in slurmstepd, all it holds from init to exit;
 * and what warm start and the node pool both need of it: the job's
 * environment, the job's user, the node's name, a user's child's argument.
 */
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "container/container_env.h"
#include "base/layout.h"
#include "base/seed_path.h"
#include "base/text.h"
#include "pool/pool_hold.h"
#include "spank/log.h"
#include "spank/step.h"

/* The step's one initialiser: nothing held, no descriptor, no mapping, no export, no key. */
static void init(struct extc_step *s)
{
	memset(s, 0, sizeof(*s));
	s->begun = true;
	s->tree = (struct extc_tree){ &s->cfg, &s->pol };
	s->hold_fd = -1;
	s->pool.hold.record_fd = -1;
	s->view.exec_probe = EXTC_EXEC_UNKNOWN;
}

void extc_step_reset(struct extc_step *s)
{
	if (s->begun) {
		if (s->hold_fd >= 0)
			close(s->hold_fd);
		if (s->shared != NULL)
			munmap(s->shared, sizeof(*s->shared));
		extc_container_env_list_free(&s->exports.containers);
		extc_pool_hold_release(&s->pool.hold);	/* the pool's hold goes with the step's */
	}
	init(s);
}

void extc_step_fail_or_warn(struct extc_step *s)
{
	s->fail_step = extc_config_on_error_fails(s->cfg.on_error, s->choice.user_asked);
	s->warn_step = !s->fail_step;
}

void extc_step_share_turn(struct extc_step *s)
{
	/* fd -1: what MAP_ANONYMOUS asks for (cppcheck checks mmap against a file) */
	const int prot = PROT_READ | PROT_WRITE, flags = MAP_SHARED | MAP_ANONYMOUS;

	// cppcheck-suppress invalidFunctionArg
	s->shared = mmap(NULL, sizeof(*s->shared), prot, flags, -1, 0);
	if (s->shared == MAP_FAILED)
		s->shared = NULL;	/* no mapping, nothing to unmap */
}

const char *extc_step_job_env(spank_t sp, const char *name, char *buf, int len)
{
	return (spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS ? buf : NULL);
}

int extc_step_expand_pattern(const struct extc_step *s, const char *pattern, char *out,
			     size_t outlen, char *why, size_t whylen)
{
	char pwbuf[4096];
	struct passwd pw, *res = NULL;

	if (getpwuid_r(s->ids.uid, &pw, pwbuf, sizeof(pwbuf), &res) != 0)
		res = NULL;
	/* only text here: the path is opened by the user's own process */
	return (extc_seed_path_expand(pattern, s->ids.uid, res ? res->pw_name : NULL, out, outlen,
				      why, whylen));
}

/*
 * The node's name, for the manifest and the stage names: SLURMD_NODENAME
 * where slurmstepd has it and it is a plain name, else the host name.
 * Stage names also carry the pid, so several slurmd on one host (which
 * share a pid space) never clash either.
 */
static void node_name(spank_t sp, char *node, size_t nodelen)
{
	char buf[EXTC_NODE_NAME_MAX + 1];
	const char *env = getenv("SLURMD_NODENAME");	/* slurmd's own, inherited */

	if (env != NULL && strlen(env) < sizeof(buf))
		strcpy(buf, env);
	else if (spank_getenv(sp, "SLURMD_NODENAME", buf, sizeof(buf)) != ESPANK_SUCCESS)
		buf[0] = '\0';
	if (buf[0] != '\0') {
		size_t i;

		for (i = 0; buf[i] != '\0'; i++) {
			if (!(buf[i] >= 'a' && buf[i] <= 'z') && !(buf[i] >= 'A' && buf[i] <= 'Z') &&
			    !(buf[i] >= '0' && buf[i] <= '9') && strchr("._-", buf[i]) == NULL)
				break;
		}
		if (buf[i] == '\0') {
			strcpy(node, buf);
			return;
		}
	}
	if (extc_layout_node_name(node, nodelen) < 0)
		strcpy(node, "node");
}

const char *extc_step_node(spank_t sp, struct extc_step *s)
{
	if (s->manifest_node[0] == '\0')
		node_name(sp, s->manifest_node, sizeof(s->manifest_node));
	return (s->manifest_node);
}

bool extc_step_creds(spank_t sp, const struct extc_step *s, struct extc_creds *cr)
{
	gid_t *groups = NULL;
	int ngroups = 0;

	cr->uid = s->ids.uid;
	cr->gid = s->ids.gid;
	cr->groups = NULL;
	cr->ngroups = 0;
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &ngroups) == ESPANK_SUCCESS &&
	    ngroups >= 0) {
		cr->groups = groups;
		cr->ngroups = (size_t)ngroups;
	}
	return (cr->groups != NULL);
}

void extc_step_child_arg(struct extc_warm_child_arg *a, const struct extc_step *s,
			 const char *leaf, uint32_t timeout_s, const char *key)
{
	const struct extc_warm_child_for f = { leaf, s->manifest_node, key, s->ids.jobid, timeout_s };
	char why[EXTC_WHY_MAX];

	if (extc_warm_child_arg_init(a, &s->cfg, &f, why, sizeof(why)) < 0)
		extc_verbose("manifest: %s", why);
}
