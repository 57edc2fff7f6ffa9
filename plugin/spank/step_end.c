/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: a step's end on this node (exit): its builds published
 * and moved into the pool by a detached process, a local leaf removed.
 */
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <slurm/spank.h>

#include "proc/background.h"
#include "base/clock.h"
#include "base/mode.h"
#include "base/text.h"
#include "proc/as_user.h"
#include "fs/fs_slot.h"
#include "fs/fs_tree.h"
#include "pool/pool_child.h"
#include "pool/pool_hold.h"
#include "pool/pool_return.h"
#include "pool/pool_taken.h"
#include "spank/log.h"
#include "spank/step.h"
#include "spank/step_end.h"
#include "spank/step_tier.h"
#include "spank/step_warm.h"
#include "warm/warm_child.h"
#include "warm/warm_data.h"
#include "warm/warm_sweep.h"

/* The step's detached end, as ps shows it (and the tests look for it). */
#define EXTC_FINISHER_NAME "extc-finisher"

/*
 * Is the leaf below the job level the step holds still the directory it
 * made, and that level still at its path? A requeued run of the job on
 * this node may have made a new directory of the same path meanwhile: that
 * one is the new run's, and is left to it. Said in one line when not.
 */
static bool ours(const struct extc_step *s, enum extc_tree_held_result res, const char *why)
{
	if (res == EXTC_TREE_HELD_REPLACED)
		extc_info("the step's directory %s was replaced by a later run (%s): it is left to "
			  "it; nothing of this step is published, pooled or removed", s->leaf_path,
			  why);
	else if (res == EXTC_TREE_HELD_REFUSED)
		extc_error("the step's directory %s cannot be checked (%s): nothing of this step is "
			   "published, pooled or removed; the job epilog takes it", s->leaf_path, why);
	return (res == EXTC_TREE_HELD_OURS);
}

/* What the end holds of what its step made: the job level, the leaf's identity. */
static struct extc_tree_held held(const struct extc_step *s)
{
	return ((struct extc_tree_held){
		.ids = &s->ids, .mode = s->choice.mode, .job_fd = s->hold_fd,
		.leaf_id = s->leaf_id_known ? &s->leaf_id : NULL,
	});
}

/* Before a late action by path (a publish, a put-back): the check alone. */
static bool still_ours(const struct extc_step *s)
{
	const struct extc_tree_held h = held(s);
	char why[EXTC_WHY_MAX];

	return (ours(s, extc_tree_held_check(&s->tree, &h, why, sizeof(why)), why));
}

/*
 * A local-mode leaf goes at the end of its step, through the job level
 * the step holds and only while it is the directory the step made (the
 * engine compares its identity again on what it opens); the epilog takes
 * what is left.
 */
static void remove_leaf(const struct extc_step *s)
{
	const struct extc_tree_held h = held(s);
	struct extc_rm_report report;
	char why[EXTC_WHY_MAX], text[256];
	uint64_t t0 = extc_clock_monotonic_ns();
	enum extc_tree_held_result res;

	res = extc_tree_remove_held_leaf(&s->tree, &h, &report, why, sizeof(why));
	if (res == EXTC_TREE_HELD_REFUSED) {
		extc_error("removing %s: %s (the job epilog tries again)", s->leaf_path, why);
		return;
	}
	if (!ours(s, res, why))
		return;
	extc_rm_report_text(&report, text, sizeof(text));
	extc_verbose("removed %s: %s in %.3f ms", s->leaf_path, text,
		     (double)(extc_clock_monotonic_ns() - t0) / 1e6);
}

static const char *abandoned_text(uint64_t n, char *buf, size_t len)
{
	buf[0] = '\0';
	if (n > 0)
		extc_fmt(buf, len, "; removed %llu stages left by killed publishers",
			 (unsigned long long)n);
	return (buf);
}

/* Warm start: publish the completed builds (in a child, as the user, bounded by publish_timeout). */
static void publish_warm(spank_t sp, const struct extc_step *s)
{
	static struct extc_warm_child_arg a;
	static struct extc_warm_publish_res r;
	const struct extc_config *cfg = &s->cfg;
	const struct extc_step_warm *w = &s->warm;
	struct extc_creds cr;
	char why[EXTC_WHY_MAX], buf[96];
	struct timespec now;
	enum extc_as_user_result ret;

	if (w->publish[0] == '\0')
		return;
	if (!extc_step_creds(sp, s, &cr))
		extc_verbose("the job's supplementary groups are unknown: publishing with its group only");
	extc_step_warm_child_arg(&a, s, s->warm_path, cfg->publish_timeout);
	clock_gettime(CLOCK_REALTIME, &now);
	extc_warm_sweep_stale_limit(cfg->publish_timeout, &now, &a.opts.stale_before);
	extc_escape(w->publish, 80, buf, sizeof(buf));
	ret = extc_as_user(&cr, (uint64_t)cfg->publish_timeout * 1000, extc_warm_child_publish, &a, &r,
			   sizeof(r), why, sizeof(why));
	if (ret == EXTC_AS_USER_FAILED) {
		extc_error("publishing to %s: %s", buf, why);
		return;
	}
	if (ret == EXTC_AS_USER_DONE) {
		char size[64], more[96];

		extc_warm_data_size_text(r.rep.copy.bytes, size, sizeof(size));
		extc_verbose("published to %s: %llu new entries (%s), %llu already there, %llu "
			     "published first by another node, %llu incomplete builds left out, in %.3f s%s",
			     buf, (unsigned long long)r.rep.published, size,
			     (unsigned long long)r.rep.present, (unsigned long long)r.rep.lost,
			     (unsigned long long)r.rep.incomplete, (double)r.ns / 1e9,
			     abandoned_text(r.rep.abandoned, more, sizeof(more)));
	} else
		extc_error("publishing to %s: %llu entries published, %llu failed: %s", buf,
			   (unsigned long long)r.rep.published, (unsigned long long)r.rep.failed, r.why);
}

/* fn on the leaf and the key, as the job's user, bounded by 'timeout_s'. */
static enum extc_as_user_result run_as_user(spank_t sp, struct extc_step *s, extc_as_user_fn fn,
					    uint32_t timeout_s)
{
	struct extc_step_child *child = &s->child;
	struct extc_creds cr;

	extc_step_creds(sp, s, &cr);
	return (extc_as_user(&cr, (uint64_t)timeout_s * 1000, fn, &child->arg, &child->res,
			     sizeof(child->res), child->why, sizeof(child->why)));
}

/*
 * Root's record of what the key holds now (the user's child moved; root
 * measures, or keeps its own numbers when its look finds the key as at the
 * hold and the child moved nothing entry by entry: 'whole_only').
 */
static void account(struct extc_step *s, bool whole_only, char *size, size_t sizelen)
{
	struct extc_step_pool *pool = &s->pool;
	char why[EXTC_WHY_MAX];
	enum extc_pool_account_result acc = extc_pool_hold_account(&pool->hold, &s->tree, whole_only,
								   why, sizeof(why));

	if (acc == EXTC_POOL_ACCOUNTED || acc == EXTC_POOL_ACCOUNT_KEPT)
		extc_warm_data_size_text(pool->hold.bytes, size, sizelen);
	else
		extc_fmt(size, sizelen, "an unknown size");
	if (acc == EXTC_POOL_ACCOUNT_UNMEASURABLE)
		extc_info("node pool: key %s cannot be measured (%s): it goes at the next eviction",
			  pool->key, why);
	else if (acc == EXTC_POOL_ACCOUNT_FAILED)
		extc_info("node pool: cannot record what key %s holds: %s", pool->key, why);
}

/*
 * The node pool, before a local-mode leaf goes: put its completed builds
 * back into the key (in a child, as the user, bounded by
 * EXTC_POOL_RETURN_TIMEOUT_S: renames, not copies), then record what the
 * key holds. true when everything came back: the note of what the step
 * took then goes (pool_taken.h); else the leaf stays for the epilog,
 * which returns it again.
 */
static bool put_back_pool(spank_t sp, struct extc_step *s)
{
	struct extc_step_child *child = &s->child;
	const struct extc_warm_publish_res *r = &child->res.put_back;
	struct timespec now;
	char size[64];
	enum extc_as_user_result ret;

	if (!s->pool.held)
		return (true);
	extc_step_child_arg(&child->arg.w, s, s->warm_path, EXTC_POOL_RETURN_TIMEOUT_S, s->pool.key);
	child->arg.key_dir = s->pool.hold.dir;
	child->arg.only_unchanged = false;
	/* the hold came before any take: what went since and is unchanged goes back whole */
	child->arg.since_take = true;
	extc_step_tier_taken_after(s, &child->arg.taken_after);
	clock_gettime(CLOCK_REALTIME, &now);
	extc_warm_sweep_stale_limit(EXTC_POOL_RETURN_TIMEOUT_S, &now, &child->arg.w.opts.stale_before);
	ret = run_as_user(sp, s, extc_pool_child_put_back, EXTC_POOL_RETURN_TIMEOUT_S);
	if (ret == EXTC_AS_USER_FAILED) {
		extc_info("node pool: nothing moved in: %s; the step's directory is left for the job "
			  "epilog, which tries again", child->why);
		account(s, false, size, sizeof(size));
		return (false);
	}
	if (ret == EXTC_AS_USER_FN_FAILED)
		extc_info("node pool: not everything moved in: %s; the step's directory is left for "
			  "the job epilog, which tries again", r->why);
	account(s, ret == EXTC_AS_USER_DONE && r->rep.published == 0 && r->rep.failed == 0, size,
		sizeof(size));
	extc_verbose("node pool: moved %llu entries into key %s (%llu of them a whole cache "
		     "directory, by one rename), kept %llu already there (a directory merged into "
		     "one counts by what it holds), left out %llu incomplete builds, %llu failed%s%s; "
		     "it holds %s",
		     (unsigned long long)(r->rep.published + r->rep.whole), s->pool.key,
		     (unsigned long long)r->rep.whole,
		     (unsigned long long)r->rep.present, (unsigned long long)r->rep.incomplete,
		     (unsigned long long)r->rep.failed, r->rep.failed ? ": " : "",
		     r->rep.failed ? r->why : "", size);
	return (ret == EXTC_AS_USER_DONE && r->rep.failed == 0);
}

/*
 * No end runs for this step (over the bound, or no process), or its move
 * into the pool did not finish: a local leaf the pool holds is left for
 * the job epilog, which returns what a note names (pool_taken.h). A step that took nothing has no note yet: one is
 * written now, so that what it built goes into the key too. Any other
 * local leaf goes now.
 */
static void leave_to_epilog(struct extc_step *s)
{
	char why[EXTC_WHY_MAX];

	if (s->choice.mode != EXTC_MODE_LOCAL)
		return;
	if (!s->pool.held) {
		remove_leaf(s);
		return;
	}
	if (!s->pool.may_take &&
	    extc_pool_taken_note(&s->tree, &s->ids, false, s->pool.key, s->warm_path, why,
				 sizeof(why)) != EXTC_POOL_TAKEN_NOTED)
		extc_info("node pool: %s; this step's builds are not pooled", why);
}

/* What the detached end is handed: slurmstepd's handle and the step, as they were at the fork. */
struct end_arg {
	spank_t sp;
	struct extc_step *s;
};

/*
 * The step's end, in a detached process (background.h): it waits on
 * children of the user's (publish_timeout bounds each), so it runs after
 * exit has returned. It holds the job level and the pool key (inherited
 * locks) until it is done, so that neither the epilog's retirement nor an
 * eviction takes the directory or the key from under it. Publishes, and
 * for a local-mode leaf puts its builds back into the pool, lets the key
 * go and removes the leaf: each only while the leaf is still the directory
 * the step made (still_ours), looked at again after the publish, which
 * can take publish_timeout. The publish and the put-back run as the user
 * on the leaf's path (warm_path): a later run that replaces the leaf
 * after the look and before or while such a child walks it is not seen.
 * That child is the user's own, on the user's own files, so no privilege
 * is had by it; but it could copy or move the new run's builds. The
 * removal has no such window but the instant before its last rmdir.
 */
static void finish(void *varg)
{
	const struct end_arg *arg = varg;
	struct extc_step *s = arg->s;
	bool back;

	if (extc_background_cgroup_problem() != NULL)
		extc_info("the step's publish and pool move: still in some of the job's cgroups (%s)",
			  extc_background_cgroup_problem());
	if (!still_ours(s))
		return;
	publish_warm(arg->sp, s);
	if (s->choice.mode != EXTC_MODE_LOCAL)
		return;
	if (extc_step_warm_publishes(s) && !still_ours(s))
		return;		/* the key is let go as this process ends */
	back = put_back_pool(arg->sp, s);
	/* from the key as the step put it back, while the step still holds it against eviction */
	if (back)
		extc_step_tier_publish(arg->sp, s, &s->child.res.put_back.rep);
	extc_pool_hold_release(&s->pool.hold);	/* the key may be evicted from here on */
	if (!back) {
		leave_to_epilog(s);	/* with its note: the epilog returns what is left */
		return;
	}
	if (s->pool.may_take)
		extc_pool_taken_drop(&s->tree, &s->ids, false);
	remove_leaf(s);
}

/*
 * The hook waits on what the user controls 5 s at most in all: a slot
 * (freed as the user's helpers end), then the detached end itself.
 */
_Static_assert(EXTC_SLOT_WAIT_MS + EXTC_HOOK_WAIT_MS < 5000,
	       "exit waits on the user's helpers for more than 5 s");

/*
 * One slot of the user's and one of the node's for the detached end
 * (fs_slot.h): a user who stops their own helpers holds a root process
 * per step end while they are stopped, and these are the bound on them.
 * False, said in one line, when none was had within EXTC_SLOT_WAIT_MS;
 * 'pooled' says whether the step's leaf is then left to the job epilog.
 */
static bool take_slots(const struct extc_step *s, bool pooled, struct extc_slot_held *slots)
{
	static const struct extc_slot_bound bound = { EXTC_SLOT_PER_USER, EXTC_SLOT_PER_NODE };
	const char *left = pooled ? "nothing of it is published, and its directory is left in "
				    "place for the job epilog, which moves its builds into the node "
				    "pool" :
				    "its builds are not published";
	char why[EXTC_WHY_MAX];
	enum extc_slot_result res = extc_slot_take(&s->tree, s->ids.uid, &bound, EXTC_SLOT_WAIT_MS,
						   slots, why, sizeof(why));

	if (res == EXTC_SLOT_USER_FULL)
		extc_info("the step's end is not detached: %u detached step ends of this user are "
			  "running on this node, the bound per user (waited %u ms); %s",
			  EXTC_SLOT_PER_USER, EXTC_SLOT_WAIT_MS, left);
	else if (res == EXTC_SLOT_NODE_FULL)
		extc_info("the step's end is not detached: %u detached step ends are running on "
			  "this node, the bound per node (waited %u ms); %s", EXTC_SLOT_PER_NODE,
			  EXTC_SLOT_WAIT_MS, left);
	else if (res == EXTC_SLOT_REFUSED)
		extc_error("the step's end is not detached: no slot under the bound of detached "
			   "step ends can be had (%s); %s", why, left);
	return (res == EXTC_SLOT_TAKEN);
}

/* The end, detached: it holds the job level and both slots with descriptors of its own. */
static enum extc_detach_result detach(spank_t sp, struct extc_step *s,
				      const struct extc_slot_held *slots, pid_t *pid)
{
	const int keep[] = { s->hold_fd, slots->user_fd, slots->node_fd };
	const struct extc_detach_opts opts = {
		.name = EXTC_FINISHER_NAME, .keep = keep, .nkeep = 3, .wait_ms = EXTC_HOOK_WAIT_MS,
		.leave_job_cgroups = true,
	};
	struct end_arg arg = { .sp = sp, .s = s };

	return (extc_background_detach(finish, &arg, &opts, pid));
}

void extc_step_end_finish(spank_t sp, struct extc_step *s)
{
	bool local = s->choice.mode == EXTC_MODE_LOCAL;
	struct extc_slot_held slots;
	enum extc_detach_result detached;
	pid_t pid;

	if (!s->created)
		return;
	extc_step_tier_note(s);
	if (!extc_step_warm_publishes(s) && !(local && s->pool.held)) {
		if (local)
			remove_leaf(s);
		return;
	}
	/* over the bound: a leaf the pool holds is left whole for the epilog; any other goes */
	if (!take_slots(s, local && s->pool.held, &slots)) {
		leave_to_epilog(s);
		return;
	}
	detached = detach(sp, s, &slots, &pid);
	extc_slot_release(&slots);	/* the detached end holds them with its own descriptors */
	if (detached == EXTC_DETACH_RUNNING) {
		extc_verbose("the step's builds are still being published or moved into the node pool "
			     "after %u ms; that goes on in the background (pid %d)", EXTC_HOOK_WAIT_MS,
			     (int)pid);
	} else if (detached == EXTC_DETACH_FAILED) {
		extc_error("cannot start the step's publish and pool move: nothing is published from "
			   "this step%s", local && s->pool.held ? "; its directory is left for the job "
			   "epilog, which moves its builds into the node pool" : "");
		leave_to_epilog(s);
	}
}
