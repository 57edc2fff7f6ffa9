/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the node pool in slurmstepd: the step's key, seeding from it, the move in at the end. */
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include <slurm/spank.h>

#include "proc/as_user.h"
#include "container/container_id.h"
#include "spank/log.h"
#include "warm/manifest.h"
#include "pool/pool_child.h"
#include "pool/pool_fs.h"
#include "pool/pool_job.h"
#include "pool/pool_key.h"
#include "spank/pool_step.h"
#include "spank/step_info.h"
#include "base/text.h"
#include "warm/warm_data.h"
#include "base/seed_path.h"
#include "warm/warm_sweep.h"
#include "spank/warm_tell.h"

#define POOL_VALUE_MAX 4096
/*
 * A few stat calls, by a child the user can stop, in init_post_opt: with
 * the kill and reap after it (at most 2 s, as_user.c) this stays within
 * the 5 s a hook may wait on the user. More means a hung filesystem on PATH.
 */
#define POOL_FP_TIMEOUT_MS 2000
#define POOL_VALUE_TOO_LONG "\001longer than 4095 bytes"

static struct {
	bool held;
	bool from_user_key;
	bool in_container;	/* keyed by an image */
	struct extc_pool_hold hold;
	char key[EXTC_POOL_KEY_LEN + 1];
} pool = { .hold = { .record_fd = -1 } };

void extc_pool_step_reset(void)
{
	extc_pool_release(&pool.hold);
	memset(&pool, 0, sizeof(pool));
	pool.hold.record_fd = -1;
}

/* The derived key's inputs from the job's environment (nothing of it is run or opened here). */
static void read_values(spank_t sp, const char **ptrs)
{
	static char values[EXTC_POOL_KEY_NVARS + 1][POOL_VALUE_MAX];
	size_t i;

	for (i = 0; extc_pool_key_vars[i] != NULL; i++) {
		spank_err_t rc = spank_getenv(sp, extc_pool_key_vars[i], values[i], POOL_VALUE_MAX);

		ptrs[i] = rc == ESPANK_SUCCESS ? values[i] : NULL;
		if (rc == ESPANK_NOSPACE)
			ptrs[i] = POOL_VALUE_TOO_LONG;
	}
}

/*
 * The installation's fingerprint and the image file's identity: the
 * user's paths are followed by the user, under a deadline.
 */
static int install_fp(spank_t sp, const struct extc_ids *ids, const char *const *values,
		      const char *image, struct extc_pool_fp_res *r, char *why, size_t whylen)
{
	struct extc_pool_fp_arg a = {
		.path = values[extc_pool_key_var_index("PATH")],
		.venv = values[extc_pool_key_var_index("VIRTUAL_ENV")],
		.conda = values[extc_pool_key_var_index("CONDA_PREFIX")],
		.cuda_home = values[extc_pool_key_var_index("CUDA_HOME")],
		.image = image,
	};
	struct extc_creds cr;

	extc_step_creds(sp, ids, &cr);
	if (extc_as_user(&cr, POOL_FP_TIMEOUT_MS, extc_pool_fp_child, &a, r, sizeof(*r), why,
			 whylen) != EXTC_AS_USER_DONE)
		return (-1);
	if (image != NULL && r->image_id[0] == '\0') {
		extc_fmt(why, whylen, "the image file cannot be identified as a regular file");
		return (-1);
	}
	return (0);
}

static int derive_key(spank_t sp, const struct extc_ids *ids, const struct extc_pool_step_image *img,
		      char *why, size_t whylen)
{
	static struct extc_pool_fp_res r;	/* too large for slurmstepd's stack */
	const char *values[EXTC_POOL_KEY_NVARS + 1];
	char user_key[EXTC_WARM_KEY_MAX + 1], isa[40] = "", image_id[EXTC_POOL_IMAGE_ID_MAX + 8];
	struct extc_pool_key_in in = { .values = values };
	struct utsname u;
	spank_err_t rc;

	rc = spank_getenv(sp, EXTC_ENV_KEY, user_key, sizeof(user_key));
	if (rc == ESPANK_NOSPACE) {
		extc_fmt(why, whylen, "%s is longer than %d bytes", EXTC_ENV_KEY, EXTC_WARM_KEY_MAX);
		return (-1);
	}
	if (rc == ESPANK_SUCCESS) {
		if (extc_warm_check_key(user_key, why, whylen) < 0)
			return (-1);
		in.user_key = user_key;
	}
	read_values(sp, values);
	memset(&r, 0, sizeof(r));
	if ((in.user_key == NULL || img->kind == EXTC_CTR_FILE) &&
	    install_fp(sp, ids, values, img->kind == EXTC_CTR_FILE ? img->spec : NULL, &r, why,
		       whylen) < 0)
		return (-1);
	if (img->kind == EXTC_CTR_FILE)
		in.container = r.image_id;
	else if (img->kind == EXTC_CTR_DIGEST &&
		 extc_fmt(image_id, sizeof(image_id), "ref:%s", img->spec) == 0)
		in.container = image_id;
	in.install = in.user_key == NULL ? r.fp : "";
	in.arch = uname(&u) == 0 ? u.machine : "";
	if (extc_isa_fingerprint("/proc/cpuinfo", isa, sizeof(isa)) < 0)
		isa[0] = '\0';
	in.isa = isa;
	pool.from_user_key = in.user_key != NULL;
	return (extc_pool_key(&in, pool.key, sizeof(pool.key)));
}

/* Why the key will not seed the step, for the --ext-cache-verbose line (a seed named may yet). */
static void report_open(const struct extc_config *cfg, enum extc_pool_hold_result held,
			const char *why)
{
	struct extc_warm_report *r = extc_warm_tell_report();
	char key[16];

	extc_warm_report_key(pool.key, key, sizeof(key));
	if (held == EXTC_POOL_EVICTING)
		extc_warm_report_cold(r, "the node pool's key %s is being evicted", key);
	else if (held != EXTC_POOL_HELD)
		extc_warm_report_cold(r, "the node pool refused the key: %s", why);
	else if (pool.hold.bytes == 0)
		extc_warm_report_cold(r, "the node pool's key for this environment (%s) holds "
				      "nothing yet", key);
	else if (cfg->seed_max == 0)
		extc_warm_report_cold(r, "seeding is disabled on this node (seed_max=0)");
}

void extc_pool_step_open(spank_t sp, const struct extc_config *cfg, const struct extc_fs_policy *pol,
			 const struct extc_ids *ids, bool job_mode, const char *leaf_path,
			 const struct extc_pool_step_image *img)
{
	char why[EXTC_WHY_MAX];
	enum extc_pool_hold_result held;

	extc_pool_step_reset();
	if (!cfg->pool)
		return;
	/* a cold start is safe; another image's builds are not */
	if (img->kind == EXTC_CTR_UNKNOWN) {
		char shown[256];

		extc_escape(img->spec, 200, shown, sizeof(shown));
		extc_info("node pool: this step runs a container the plugin cannot identify (%s): it "
			  "starts cold and is not pooled", shown);
		extc_warm_report_cold(extc_warm_tell_report(), "this step runs a container the plugin "
				      "cannot identify (%s): no node pool key, not pooled", shown);
		return;
	}
	pool.in_container = img->kind != EXTC_CTR_HOST;
	extc_step_node(sp);
	if (derive_key(sp, ids, img, why, sizeof(why)) < 0) {
		extc_info("node pool: no key for this step (%s): it starts cold and is not pooled", why);
		extc_warm_report_cold(extc_warm_tell_report(), "no node pool key for this step: %s", why);
		return;
	}
	held = extc_pool_hold(cfg, pol, ids, pool.key, &pool.hold, why, sizeof(why));
	if (held == EXTC_POOL_EVICTING)
		extc_verbose("node pool: key %s is being evicted: this step starts cold", pool.key);
	else if (held == EXTC_POOL_REFUSED)
		extc_error("node pool: %s; this step starts cold and is not pooled", why);
	pool.held = held == EXTC_POOL_HELD;
	report_open(cfg, held, why);
	if (!pool.held)
		return;
	extc_verbose("node pool: key %s (%s%s)%s", pool.key,
		     pool.from_user_key ? "from " EXTC_ENV_KEY : "derived from the environment",
		     pool.in_container ? ", and the container image" : "",
		     pool.hold.bytes == 0 ? ": it holds nothing yet, this step starts cold" : "");
	/* a job-mode directory outlives the step: the epilog moves its builds in */
	if (job_mode && extc_pool_job_note(cfg, pol, ids, pool.key, leaf_path, why, sizeof(why)) < 0)
		extc_error("node pool: %s; this job's builds will not be pooled", why);
}

/*
 * The two jobs of the user's child, with their argument and result (too
 * large for slurmstepd's stack, and seen by one hook at a time).
 */
static struct {
	struct extc_warm_child_arg arg;
	union {
		struct extc_warm_seed_res seed;
		struct extc_pool_publish_res publish;
	} res;
	char why[EXTC_WHY_MAX];
} child;

/* fn on the leaf and the key, as the job's user, bounded by 'timeout_s'. */
static enum extc_as_user_result run_as_user(spank_t sp, const struct extc_ids *ids,
					    extc_as_user_fn fn, uint32_t timeout_s)
{
	struct extc_creds cr;

	extc_step_creds(sp, ids, &cr);
	return (extc_as_user(&cr, (uint64_t)timeout_s * 1000, fn, &child.arg, &child.res,
			     sizeof(child.res), child.why, sizeof(child.why)));
}

bool extc_pool_step_held(void)
{
	return (pool.held);
}


bool extc_pool_step_seeds(const struct extc_config *cfg, bool seed_named)
{
	/* root's record says whether the key holds anything: no look at an empty one */
	return (pool.held && !seed_named && cfg->seed_max > 0 && pool.hold.bytes > 0);
}

/* What the key's seed did, for the --ext-cache-verbose line. */
static void report_seed(const struct extc_warm_seed_res *r)
{
	char key[16], where[64];

	extc_warm_report_key(pool.key, key, sizeof(key));
	extc_fmt(where, sizeof(where), "the node pool (key %s)", key);
	extc_warm_report_seeded(extc_warm_tell_report(), where, r, child.arg.opts.take);
}

void extc_pool_step_seed(const struct extc_config *cfg, const struct extc_ids *ids,
			 const char *leaf_path, bool seed_named)
{
	const struct extc_warm_seed_res *r = &child.res.seed;
	char size[64];

	if (!extc_pool_step_seeds(cfg, seed_named))
		return;
	extc_step_child_arg(&child.arg, cfg, ids, leaf_path, cfg->seed_timeout, pool.key);
	child.arg.seed = pool.hold.dir;
	/* the key's builds are renamed into the leaf, and moved back at the end: no copy */
	child.arg.opts.take = true;
	/* in the task, as the user: what waits on it is the user's own */
	extc_warm_seed_child(&child.arg, &child.res, sizeof(child.res));
	extc_warm_size_text(r->st.bytes, size, sizeof(size));
	report_seed(r);
	if (r->seed == EXTC_SEED_DONE)
		extc_verbose("node pool: seeded %s from key %s: took %llu entries by rename (no "
			     "copy) in %.3f s", leaf_path, pool.key, (unsigned long long)r->st.files,
			     (double)r->ns / 1e9);
	else if (r->seed == EXTC_SEED_REFUSED)
		extc_info("node pool: not seeded, the step starts cold: %s", r->seed_why);
}

/* Root's record of what the key holds now (the user's child moved; root measures). */
static void account(const struct extc_config *cfg, const struct extc_fs_policy *pol, char *size,
		    size_t sizelen)
{
	char why[EXTC_WHY_MAX];
	enum extc_pool_account_result acc = extc_pool_account(&pool.hold, cfg, pol, why, sizeof(why));

	if (acc == EXTC_POOL_ACCOUNTED)
		extc_warm_size_text(pool.hold.bytes, size, sizelen);
	else
		extc_fmt(size, sizelen, "an unknown size");
	if (acc == EXTC_POOL_ACCOUNT_UNMEASURABLE)
		extc_info("node pool: key %s cannot be measured (%s): it goes at the next eviction",
			  pool.key, why);
	else if (acc == EXTC_POOL_ACCOUNT_FAILED)
		extc_info("node pool: cannot record what key %s holds: %s", pool.key, why);
}

void extc_pool_step_publish(spank_t sp, const struct extc_config *cfg,
			    const struct extc_fs_policy *pol, const struct extc_ids *ids,
			    const char *leaf_path)
{
	const struct extc_pool_publish_res *r = &child.res.publish;
	struct timespec now;
	char size[64];
	enum extc_as_user_result ret;

	if (!pool.held)
		return;
	extc_step_child_arg(&child.arg, cfg, ids, leaf_path, cfg->publish_timeout, pool.key);
	child.arg.publish = pool.hold.dir;
	clock_gettime(CLOCK_REALTIME, &now);
	extc_warm_stale_limit(cfg->publish_timeout, &now, &child.arg.opts.stale_before);
	ret = run_as_user(sp, ids, extc_pool_publish_child, cfg->publish_timeout);
	if (ret == EXTC_AS_USER_FAILED) {
		extc_info("node pool: nothing moved in: %s", child.why);
		account(cfg, pol, size, sizeof(size));
		return;
	}
	if (ret == EXTC_AS_USER_FN_FAILED)
		extc_info("node pool: not everything moved in: %s", r->pub.why);
	account(cfg, pol, size, sizeof(size));
	extc_verbose("node pool: moved %llu entries into key %s, kept %llu already there (a "
		     "directory merged into one counts by what it holds), left out %llu "
		     "incomplete builds, %llu failed%s%s; it holds %s",
		     (unsigned long long)r->pub.rep.published, pool.key,
		     (unsigned long long)r->pub.rep.present, (unsigned long long)r->pub.rep.incomplete,
		     (unsigned long long)r->pub.rep.failed, r->pub.rep.failed ? ": " : "",
		     r->pub.rep.failed ? r->pub.why : "", size);
}
