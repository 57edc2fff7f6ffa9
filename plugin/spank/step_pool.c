/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spank-ext-cache: the node pool in slurmstepd: the step's key, derived and
 * held (init_post_opt), and the seed from it (task_init).
 */
#include <string.h>
#include <sys/utsname.h>

#include <slurm/spank.h>

#include "container/container_id.h"
#include "base/seed_path.h"
#include "base/text.h"
#include "proc/as_user.h"
#include "pool/pool_child.h"
#include "pool/pool_gpu.h"
#include "pool/pool_hold.h"
#include "pool/pool_job.h"
#include "pool/pool_key.h"
#include "pool/pool_taken.h"
#include "spank/log.h"
#include "spank/step.h"
#include "spank/step_pool.h"
#include "spank/step_tell.h"
#include "spank/step_tier.h"
#include "warm/manifest.h"
#include "warm/warm_child.h"
#include "warm/warm_data.h"
#include "warm/warm_report.h"
#include "warm/warm_seed.h"

#define POOL_VALUE_MAX 4096
/*
 * A few stat calls, by a child the user can stop, in init_post_opt: with
 * the kill and reap after it (at most 2 s, as_user.c) this stays within
 * the 5 s a hook may wait on the user. More means a hung filesystem on PATH.
 */
#define POOL_FP_TIMEOUT_MS 2000
#define POOL_VALUE_TOO_LONG "\001longer than 4095 bytes"

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
static int install_fp(spank_t sp, const struct extc_step *s, const char *const *values,
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

	extc_step_creds(sp, s, &cr);
	if (extc_as_user(&cr, POOL_FP_TIMEOUT_MS, extc_pool_child_fp, &a, r, sizeof(*r), why,
			 whylen) != EXTC_AS_USER_DONE)
		return (-1);
	if (image != NULL && r->image_id[0] == '\0') {
		extc_fmt(why, whylen, "the image file cannot be identified as a regular file");
		return (-1);
	}
	return (0);
}

static int derive_key(spank_t sp, struct extc_step *s, char *why, size_t whylen)
{
	const struct extc_step_image *img = &s->image;
	static struct extc_pool_fp_res r;	/* too large for slurmstepd's stack */
	static char gpus[EXTC_POOL_GPU_TEXT_MAX];	/* likewise */
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
		if (extc_seed_path_check_key(user_key, why, whylen) < 0)
			return (-1);
		in.user_key = user_key;
	}
	read_values(sp, values);
	memset(&r, 0, sizeof(r));
	if ((in.user_key == NULL || img->kind == EXTC_CTR_FILE) &&
	    install_fp(sp, s, values, img->kind == EXTC_CTR_FILE ? img->spec : NULL, &r, why,
		       whylen) < 0)
		return (-1);
	if (img->kind == EXTC_CTR_FILE)
		in.container = r.image_id;
	else if (img->kind == EXTC_CTR_DIGEST &&
		 extc_fmt(image_id, sizeof(image_id), "ref:%s", img->spec) == 0)
		in.container = image_id;
	in.install = in.user_key == NULL ? r.fp : "";
	in.arch = uname(&u) == 0 ? u.machine : "";
	if (extc_manifest_isa_fingerprint("/proc/cpuinfo", isa, sizeof(isa)) < 0)
		isa[0] = '\0';
	in.isa = isa;
	/* the kernel's and the driver's files, read as root; never the user's */
	if (extc_pool_gpu_archs("/proc", "/sys", gpus, sizeof(gpus)) < 0) {
		extc_fmt(why, whylen, "the node's GPU architectures cannot be read (out of memory)");
		return (-1);
	}
	in.gpus = gpus;
	s->pool.from_user_key = in.user_key != NULL;
	return (extc_pool_key(&in, s->pool.key, sizeof(s->pool.key)));
}

/* Why the key will not seed the step, for the --ext-cache-verbose line (a seed named may yet). */
static void report_open(struct extc_step *s, enum extc_pool_hold_result held, const char *why)
{
	struct extc_warm_report *r = extc_step_tell_report(s);
	char key[16];

	extc_warm_report_key(s->pool.key, key, sizeof(key));
	if (held == EXTC_POOL_EVICTING)
		extc_warm_report_cold(r, "the node pool's key %s is being evicted", key);
	else if (held != EXTC_POOL_HELD)
		extc_warm_report_cold(r, "the node pool refused the key: %s", why);
	else if (s->pool.hold.bytes == 0)
		extc_warm_report_cold(r, "the node pool's key for this environment (%s) holds "
				      "nothing yet", key);
	else if (s->cfg.seed_max == 0)
		extc_warm_report_cold(r, "seeding is disabled on this node (seed_max=0)");
}

/*
 * What the key lost since its last step (a return that failed where no
 * step could hear it: slurmstepd killed, a node rebooted), said once: in
 * the log, and to the user with --ext-cache-verbose.
 */
static void tell_lost(struct extc_step *s)
{
	char text[EXTC_WHY_MAX + 64], key[16];

	if (!extc_pool_taken_lost(&s->tree, &s->ids, s->pool.key, text, sizeof(text)))
		return;
	extc_warm_report_key(s->pool.key, key, sizeof(key));
	extc_info("node pool: key %s lost builds %s", s->pool.key, text);
	extc_fmt(s->tell.lost, sizeof(s->tell.lost), "the node pool's key %s lost builds %s", key,
		 text);
}

/*
 * Before any task can take the key's builds (task_init), root notes what
 * may be taken and into which directory: whatever retires the tree
 * returns it first. Without the note the step takes nothing. A job-mode
 * job's steps share one directory: only the first key noted on the node
 * may take.
 */
static void note_taken(struct extc_step *s)
{
	struct extc_step_pool *pool = &s->pool;
	char why[EXTC_WHY_MAX];
	enum extc_pool_taken_result noted;

	/* an empty key may yet be filled from the site tier by the tasks */
	if ((pool->hold.bytes == 0 && !s->tier.fetch) || s->cfg.seed_max == 0)
		return;
	noted = extc_pool_taken_note(&s->tree, &s->ids, s->choice.mode == EXTC_MODE_JOB, pool->key,
				     s->warm_path, why, sizeof(why));
	pool->may_take = noted == EXTC_POOL_TAKEN_NOTED;
	if (noted == EXTC_POOL_TAKEN_OTHER) {
		extc_verbose("node pool: a step of this job took another key's builds into the job's "
			     "directory on this node: this step takes none of key %s", pool->key);
		extc_warm_report_cold(extc_step_tell_report(s), "the job's directory on this node holds "
				      "another environment's builds from the node pool: none taken");
	} else if (noted == EXTC_POOL_TAKEN_FAILED) {
		extc_error("node pool: %s; this step takes nothing from the pool", why);
	}
}

void extc_step_pool_open(spank_t sp, struct extc_step *s)
{
	const struct extc_config *cfg = &s->cfg;
	const struct extc_step_image *img = &s->image;
	struct extc_step_pool *pool = &s->pool;
	char why[EXTC_WHY_MAX];
	enum extc_pool_hold_result held;

	if (!cfg->pool)
		return;
	/* a cold start is safe; another image's builds are not */
	if (img->kind == EXTC_CTR_UNKNOWN) {
		char shown[256];

		extc_escape(img->spec, 200, shown, sizeof(shown));
		extc_info("node pool: this step runs a container the plugin cannot identify (%s): it "
			  "starts cold and is not pooled", shown);
		extc_warm_report_cold(extc_step_tell_report(s), "this step runs a container the plugin "
				      "cannot identify (%s): no node pool key, not pooled", shown);
		return;
	}
	pool->in_container = img->kind != EXTC_CTR_HOST;
	extc_step_node(sp, s);
	if (derive_key(sp, s, why, sizeof(why)) < 0) {
		extc_info("node pool: no key for this step (%s): it starts cold and is not pooled", why);
		extc_warm_report_cold(extc_step_tell_report(s), "no node pool key for this step: %s", why);
		return;
	}
	held = extc_pool_hold(&s->tree, &s->ids, pool->key, &pool->hold, why, sizeof(why));
	if (held == EXTC_POOL_EVICTING)
		extc_verbose("node pool: key %s is being evicted: this step starts cold", pool->key);
	else if (held == EXTC_POOL_REFUSED)
		extc_error("node pool: %s; this step starts cold and is not pooled", why);
	pool->held = held == EXTC_POOL_HELD;
	report_open(s, held, why);
	if (!pool->held)
		return;
	extc_verbose("node pool: key %s (%s%s)%s", pool->key,
		     pool->from_user_key ? "from " EXTC_ENV_KEY : "derived from the environment",
		     pool->in_container ? ", and the container image" : "",
		     pool->hold.bytes == 0 ? ": it holds nothing yet, this step starts cold" : "");
	tell_lost(s);
	/* a job-mode directory outlives the step: the epilog moves its builds in */
	if (s->choice.mode == EXTC_MODE_JOB &&
	    extc_pool_job_note(&s->tree, &s->ids, pool->key, s->warm_path, why, sizeof(why)) < 0)
		extc_error("node pool: %s; this job's builds will not be pooled", why);
	extc_step_tier_open(s);
	note_taken(s);
}

bool extc_step_pool_seeds(const struct extc_step *s, bool seed_named)
{
	const struct extc_step_pool *pool = &s->pool;

	/* root's record says whether the key holds anything: no look at an empty one */
	return (pool->held && pool->may_take && !seed_named && s->cfg.seed_max > 0 &&
		(pool->hold.bytes > 0 || s->tier.fetch));
}

/* What the key's seed did, for the --ext-cache-verbose line. */
static void report_seed(struct extc_step *s, const struct extc_warm_seed_res *r, bool from_tier)
{
	char key[16], where[160];

	extc_warm_report_key(s->pool.key, key, sizeof(key));
	/* a take of nothing says less than why the tier gave nothing */
	if (s->tier.told_cold && r->seed == EXTC_SEED_DONE && r->st.files == 0)
		return;
	if (from_tier && r->seed == EXTC_SEED_DONE && r->st.files > 0) {
		/* copied from the tier into the node pool, then taken from it by rename */
		extc_fmt(where, sizeof(where), "the site tier (generation %s, key %s)",
			 s->tier.generation, key);
		extc_warm_report_warm(extc_step_tell_report(s), where, s->tier.fetched_files,
				      s->tier.fetched_bytes, s->tier.fetched_ns + r->ns);
		return;
	}
	extc_fmt(where, sizeof(where), "the node pool (key %s)", key);
	extc_warm_report_seeded(extc_step_tell_report(s), where, r);
}

void extc_step_pool_seed(spank_t sp, struct extc_step *s, bool seed_named)
{
	struct extc_step_child *child = &s->child;
	const struct extc_step_pool *pool = &s->pool;
	const struct extc_warm_seed_res *r = &child->res.seed;
	const char *leaf_path = s->warm_path;
	struct extc_creds cr;
	char size[64];
	bool from_tier = false;

	if (!extc_step_pool_seeds(s, seed_named))
		return;
	/* a key that may hold nothing: the tasks fill it from the site tier first */
	if (s->tier.fetch) {
		enum extc_step_tier_fetch_result fetched = extc_step_tier_fetch(sp, s);

		if (fetched == EXTC_STEP_TIER_COLD && pool->hold.bytes == 0)
			return;
		from_tier = fetched == EXTC_STEP_TIER_FETCHED;
	}
	extc_step_child_arg(&child->arg.w, s, leaf_path, s->cfg.seed_timeout, pool->key);
	child->arg.key_dir = pool->hold.dir;
	/* the key's builds are renamed into the leaf, and put back at the end: no copy */
	/*
	 * from the task, as the user: what waits on it is the user's own; in a
	 * child of it that holds neither the key's record nor the job level
	 */
	extc_step_creds(sp, s, &cr);
	extc_warm_child_run_seed(&cr, s->cfg.seed_timeout, extc_pool_child_take, &child->arg,
				 &child->res.seed);
	extc_warm_data_size_text(r->st.bytes, size, sizeof(size));
	report_seed(s, r, from_tier);
	if (r->seed == EXTC_SEED_DONE)
		extc_verbose("node pool: seeded %s from key %s: took %llu %s by rename (no "
			     "copy) in %.3f s", leaf_path, pool->key, (unsigned long long)r->st.files,
			     r->st.files == 1 ? "entry" : "entries", (double)r->ns / 1e9);
	else if (r->seed == EXTC_SEED_REFUSED)
		extc_info("node pool: not seeded, the step starts cold: %s", r->seed_why);
}

