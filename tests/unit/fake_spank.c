/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache tests: an in-memory stand-in for the spank_* and slurm_* calls of slurmstepd. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurm_version.h>
#include <slurm/spank.h>

#include "fake_spank.h"

#define ENV_MAX 64
#define LOG_MAX 256

static struct {
	spank_context_t ctx;
	struct fake_job job;
	char *env[ENV_MAX];
	struct spank_option *options[8];
	size_t noptions;
	gid_t groups[4];
	int ngroups;
	slurm_job_info_t jobs[16];	/* what the fake controller knows */
	size_t njobs;
	int ctl_errno;			/* its error for an unknown job (0: invalid job id) */
	enum fake_ctl_fault ctl_fault;
} fake;

/*
 * The log lines, shared with every process forked after the first reset:
 * a task (forked by the tests as slurmstepd forks one) and the detached
 * work of exit and the epilog log from processes of their own.
 */
struct shared_log {
	size_t nlog;
	char line[LOG_MAX][1200];
};
static struct shared_log *shared;

static void shared_log_init(void)
{
	void *p;

	if (shared != NULL)
		return;
	p = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		abort();
	shared = p;
}

void fake_set_context(spank_context_t ctx)
{
	fake.ctx = ctx;
}

void fake_reset(spank_context_t ctx, const struct fake_job *job)
{
	size_t i;

	for (i = 0; i < ENV_MAX; i++) {
		free(fake.env[i]);
		fake.env[i] = NULL;
	}
	fake.ctx = ctx;
	fake.job = *job;
	fake.noptions = 0;
	fake.ngroups = -1;
	shared_log_init();
	shared->nlog = 0;
	/* what the hooks detach is reparented here, to be waited for (fake_wait_background) */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	fake.njobs = 0;
	fake.ctl_errno = 0;
	fake.ctl_fault = FAKE_CTL_ANSWERS;
}

static char **env_slot(const char *name, bool create)
{
	size_t len = strlen(name);
	char **empty = NULL;
	size_t i;

	for (i = 0; i < ENV_MAX; i++) {
		if (fake.env[i] == NULL) {
			if (empty == NULL)
				empty = &fake.env[i];
			continue;
		}
		if (strncmp(fake.env[i], name, len) == 0 && fake.env[i][len] == '=')
			return (&fake.env[i]);
	}
	return (create ? empty : NULL);
}

void fake_env_set(const char *name, const char *value)
{
	char **slot = env_slot(name, true);

	if (slot == NULL)
		abort();
	free(*slot);
	if (asprintf(slot, "%s=%s", name, value) < 0)
		abort();
}

const char *fake_env_get(const char *name)
{
	char **slot = env_slot(name, false);

	return (slot ? strchr(*slot, '=') + 1 : NULL);
}

int fake_option_named(const char *name, const char *value, int remote)
{
	size_t i;

	for (i = 0; i < fake.noptions; i++) {
		if (strcmp(fake.options[i]->name, name) == 0)
			return (fake.options[i]->cb(fake.options[i]->val, value, remote));
	}
	abort();
}

int fake_option(const char *value, int remote)
{
	return (fake_option_named("ext-cache", value, remote));
}

void fake_set_groups(const gid_t *groups, int n)
{
	fake.ngroups = n;
	if (n > 0)
		memcpy(fake.groups, groups, (size_t)n * sizeof(gid_t));
}

static void capture(const char *level, const char *fmt, va_list ap)
{
	char line[1024];

	size_t i;

	vsnprintf(line, sizeof(line), fmt, ap);
	shared_log_init();
	i = __atomic_fetch_add(&shared->nlog, 1, __ATOMIC_SEQ_CST);
	if (i < LOG_MAX)
		snprintf(shared->line[i], sizeof(shared->line[0]), "%s: %s", level, line);
}

static size_t log_count(void)
{
	size_t n = shared == NULL ? 0 : __atomic_load_n(&shared->nlog, __ATOMIC_SEQ_CST);

	return (n < LOG_MAX ? n : LOG_MAX);
}

void fake_wait_background(void)
{
	int status;

	while (waitpid(-1, &status, 0) > 0 || errno == EINTR)
		;
}

bool fake_log_has(const char *level, const char *needle)
{
	size_t i, len = strlen(level), n = log_count();

	for (i = 0; i < n; i++) {
		if (strncmp(shared->line[i], level, len) == 0 && shared->line[i][len] == ':' &&
		    strstr(shared->line[i] + len, needle) != NULL)
			return (true);
	}
	return (false);
}

void fake_log_dump(void)
{
	size_t i, n = log_count();

	for (i = 0; i < n; i++)
		fprintf(stderr, "  log %s\n", shared->line[i]);
}

/* ---- the Slurm side ---------------------------------------------------- */

spank_context_t spank_context(void)
{
	return (fake.ctx);
}

int spank_remote(spank_t sp)
{
	(void)sp;
	return (fake.ctx == S_CTX_REMOTE);
}

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
	(void)sp;
	if (fake.noptions == sizeof(fake.options) / sizeof(fake.options[0]))
		abort();
	fake.options[fake.noptions++] = opt;
	return (ESPANK_SUCCESS);
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
	spank_err_t rc = ESPANK_SUCCESS;
	bool script = (fake.ctx == S_CTX_JOB_SCRIPT);
	va_list ap;

	(void)sp;
	va_start(ap, item);
	switch (item) {
	case S_JOB_UID:
		*va_arg(ap, uid_t *) = fake.job.uid;
		break;
	case S_JOB_GID:
		*va_arg(ap, gid_t *) = fake.job.gid;
		break;
	case S_JOB_ID:
		*va_arg(ap, uint32_t *) = fake.job.jobid;
		break;
	/* like Slurm, the epilog gets nothing but uid, gid and job id */
	case S_JOB_STEPID:
		if (script)
			rc = ESPANK_NOT_AVAIL;
		else
			*va_arg(ap, uint32_t *) = fake.job.stepid;
		break;
	case S_TASK_ID:
		*va_arg(ap, int *) = fake.job.taskid;
		break;
	case S_JOB_SUPPLEMENTARY_GIDS:
		if (fake.ngroups < 0) {
			rc = ESPANK_NOT_AVAIL;
		} else {
			*va_arg(ap, gid_t **) = fake.groups;
			*va_arg(ap, int *) = fake.ngroups;
		}
		break;
	default:
		rc = ESPANK_NOT_AVAIL;
		break;
	}
	va_end(ap);
	return (rc);
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
	const char *value;

	(void)sp;
	if (fake.ctx != S_CTX_REMOTE)
		return (ESPANK_NOT_REMOTE);
	value = fake_env_get(var);
	if (value == NULL)
		return (ESPANK_ENV_NOEXIST);
	if ((int)strlen(value) >= len)
		return (ESPANK_NOSPACE);
	strcpy(buf, value);
	return (ESPANK_SUCCESS);
}

spank_err_t spank_setenv(spank_t sp, const char *var, const char *val, int overwrite)
{
	(void)sp;
	if (fake.ctx != S_CTX_REMOTE)
		return (ESPANK_NOT_REMOTE);
	if (!overwrite && fake_env_get(var) != NULL)
		return (ESPANK_ENV_EXISTS);
	fake_env_set(var, val);
	return (ESPANK_SUCCESS);
}

spank_err_t spank_unsetenv(spank_t sp, const char *var)
{
	char **slot = env_slot(var, false);

	(void)sp;
	if (fake.ctx != S_CTX_REMOTE)
		return (ESPANK_NOT_REMOTE);
	if (slot != NULL) {
		free(*slot);
		*slot = NULL;
	}
	return (ESPANK_SUCCESS);
}

const char *spank_strerror(spank_err_t err)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "spank error %d", (int)err);
	return (buf);
}

#define FAKE_LOG(fn, level)                       \
	void fn(const char *fmt, ...)             \
	{                                         \
		va_list ap;                       \
		va_start(ap, fmt);                \
		capture(level, fmt, ap);          \
		va_end(ap);                       \
	}

FAKE_LOG(slurm_error, "error")
FAKE_LOG(slurm_info, "info")
FAKE_LOG(slurm_verbose, "verbose")
FAKE_LOG(slurm_debug, "debug")
FAKE_LOG(slurm_spank_log, "user")

/* ---- the controller, for the leftover sweep ------------------------------- */

void fake_ctl_set_job(uint32_t jobid, uint32_t state)
{
	if (fake.njobs < sizeof(fake.jobs) / sizeof(fake.jobs[0])) {
		fake.jobs[fake.njobs].job_id = jobid;
		fake.jobs[fake.njobs].job_state = state;
		fake.njobs++;
	}
}

void fake_ctl_set_error(int err)
{
	fake.ctl_errno = err;
}

void fake_ctl_set_fault(enum fake_ctl_fault fault)
{
	fake.ctl_fault = fault;
}

/* As 24.11's and 26.05's do to an uninitialised process, on request. */
void slurm_init(const char *conf)
{
	(void)conf;
	if (fake.ctl_fault == FAKE_CTL_CRASHES) {
		signal(SIGSEGV, SIG_DFL);	/* not cmocka's handler: die as 26.05 does */
		raise(SIGSEGV);
	}
	if (fake.ctl_fault == FAKE_CTL_FATAL)
		exit(1);
	while (fake.ctl_fault == FAKE_CTL_HANGS)
		pause();
}

/* The controller's answer, with each release's signature; the error code goes in errno, as libslurm's. */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
int slurm_load_job(job_info_msg_t **resp, slurm_step_id_t step_id, uint16_t show_flags)
{
	uint32_t job_id = step_id.job_id;
#else
int slurm_load_job(job_info_msg_t **resp, uint32_t job_id, uint16_t show_flags)
{
#endif
	size_t i;

	(void)show_flags;
	for (i = 0; i < fake.njobs; i++) {
		if (fake.jobs[i].job_id != job_id)
			continue;
		*resp = calloc(1, sizeof(**resp));
		(*resp)->record_count = 1;
		(*resp)->job_array = calloc(1, sizeof(slurm_job_info_t));
		(*resp)->job_array[0] = fake.jobs[i];
		return (SLURM_SUCCESS);
	}
	errno = fake.ctl_errno != 0 ? fake.ctl_errno : ESLURM_INVALID_JOB_ID;
	return (SLURM_ERROR);
}

void slurm_free_job_info_msg(job_info_msg_t *msg)
{
	if (msg != NULL)
		free(msg->job_array);
	free(msg);
}
