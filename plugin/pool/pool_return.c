/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a directory's builds returned to their key, as the user, after the step that took them. */
#include <string.h>
#include <time.h>

#include "base/text.h"
#include "pool/pool_child.h"
#include "pool/pool_hold.h"
#include "pool/pool_return.h"
#include "proc/as_user.h"
#include "warm/warm_sweep.h"

enum extc_pool_return_result extc_pool_return(const struct extc_tree *tree,
					      const struct extc_ids *ids,
					      const struct extc_pool_return_for *f,
					      struct extc_warm_walk_report *rep, char *why,
					      size_t whylen)
{
	static struct extc_pool_child_arg a;	/* too large for a stack that may be slurmstepd's */
	static struct extc_warm_publish_res r;
	struct extc_creds cr = { .uid = ids->uid, .gid = ids->gid };
	struct extc_pool_hold h = { .record_fd = -1 };
	enum extc_pool_return_result rv = EXTC_POOL_RETURN_FAILED;
	char sub[EXTC_WHY_MAX];
	struct timespec now;
	enum extc_as_user_result ran;
	enum extc_pool_hold_result held;

	memset(rep, 0, sizeof(*rep));
	held = extc_pool_hold(tree, ids, f->key, &h, why, whylen);
	if (held == EXTC_POOL_EVICTING)
		extc_fmt(why, whylen, "key %s is being evicted", f->key);
	if (held != EXTC_POOL_HELD)
		return (EXTC_POOL_RETURN_FAILED);
	memset(&a, 0, sizeof(a));
	if (extc_warm_child_arg_init(&a.w, tree->cfg,
				     &(const struct extc_warm_child_for){ f->dir, f->node, f->key,
									  ids->jobid, f->timeout_s },
				     why, whylen) < 0)
		goto out;
	a.key_dir = h.dir;
	if (f->changed_before != NULL) {
		a.changed_before = *f->changed_before;
		a.only_unchanged = true;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	extc_warm_sweep_stale_limit(f->timeout_s, &now, &a.w.opts.stale_before);
	ran = extc_as_user(&cr, (uint64_t)f->timeout_s * 1000, extc_pool_child_put_back, &a, &r,
			   sizeof(r), why, whylen);
	if (ran != EXTC_AS_USER_FAILED) {
		*rep = r.rep;
		rv = EXTC_POOL_RETURNED;
		if (ran == EXTC_AS_USER_FN_FAILED || rep->failed > 0) {
			extc_fmt(why, whylen, "%s", r.why);
			rv = rep->published > 0 ? EXTC_POOL_RETURN_PARTIAL : EXTC_POOL_RETURN_FAILED;
		}
	}
	/* whatever moved, root measures what the key holds now (the user's numbers are never asked) */
	if (extc_pool_hold_account(&h, tree, false, sub, sizeof(sub)) != EXTC_POOL_ACCOUNTED &&
	    rv == EXTC_POOL_RETURNED)
		extc_fmt(why, whylen, "key %s: %s", f->key, sub);
out:
	extc_pool_hold_release(&h);
	return (rv);
}
