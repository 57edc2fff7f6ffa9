/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the --ext-cache* options as srun, sbatch, salloc and slurmstepd see them. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "spank/log.h"
#include "base/mode.h"
#include "spank/option.h"
#include "base/text.h"
#include "base/seed_path.h"

enum { OPT_MODE, OPT_SEED, OPT_PUBLISH, OPT_VERBOSE, OPT_COUNT };

/*
 * What set the kept value, in rising precedence: nothing yet, the job's
 * exported option, anything else (#SBATCH lines, a Slurm that copies), or
 * this command's own command line. A higher source replaces a lower one.
 */
enum option_source { SOURCE_NONE, SOURCE_INHERITED, SOURCE_OTHER, SOURCE_COMMAND_LINE };

/* One spare byte marks "too long": an overlong value keeps one byte too many and stays invalid. */
static struct {
	enum option_source source;
	char value[EXTC_WARM_PATH_MAX + 2];
} request[OPT_COUNT];

static const char *const option_names[OPT_COUNT] = {
	[OPT_MODE] = "--ext-cache",
	[OPT_SEED] = "--ext-cache-seed",
	[OPT_PUBLISH] = "--ext-cache-publish",
	[OPT_VERBOSE] = "--ext-cache-verbose",
};

/*
 * sbatch and salloc export every option they were given to the job as
 * SLURM_SPANK_ + "_SLURM_SPANK_OPTION_" + plugin name + "_" + option name,
 * each byte that is not a letter or digit made '_' (_opt_env_name in Slurm's
 * src/common/plugstack.c, spank.c in later releases). The plugin is ext_cache
 * (SPANK_PLUGIN in dispatch.c).
 */
static const char *const inherited_env[OPT_COUNT] = {
	[OPT_MODE] = "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache",
	[OPT_SEED] = "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache_seed",
	[OPT_PUBLISH] = "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache_publish",
	[OPT_VERBOSE] = "SLURM_SPANK__SLURM_SPANK_OPTION_ext_cache_ext_cache_verbose",
};

/*
 * The bounds of this process's original argument strings, fields 48 and 49
 * of /proc/self/stat (proc(5), Linux >= 3.5), read once. srun, salloc and
 * sbatch hand the callback getopt_long's optarg, which points into main's
 * own argv strings: _set_options in src/srun/libsrun/opt.c (22.05) or
 * src/srun/opt.c (24.11, 26.05), src/salloc/opt.c and src/sbatch/opt.c,
 * then spank_process_option and _do_option_cb pass it on as is. sbatch's
 * #SBATCH lines are parsed from an argv of xmalloc'd copies
 * (_opt_batch_script), so they lie outside these bounds.
 */
static struct {
	bool read;
	uintptr_t start, end;	/* [start, end); both 0 when unknown */
} arg_range;

/* Fields counted from the one after comm's last ')', which is field 3. */
enum { STAT_FIRST_FIELD = 3, STAT_ARG_START = 48, STAT_ARG_END = 49 };

/* Fields 48 and 49 of a /proc/<pid>/stat line; -1 if the line has fewer or bad ones. */
static int parse_arg_range(char *line, uintptr_t *start, uintptr_t *end)
{
	char *cursor = strrchr(line, ')');
	char *field_end, *digits_end;
	unsigned long long value;
	int field;

	if (cursor == NULL)
		return (-1);
	cursor++;
	for (field = STAT_FIRST_FIELD; field <= STAT_ARG_END; field++) {
		while (*cursor == ' ')
			cursor++;
		if (*cursor == '\0')
			return (-1);
		field_end = cursor + strcspn(cursor, " \n");
		if (field >= STAT_ARG_START) {
			errno = 0;
			value = strtoull(cursor, &digits_end, 10);
			if (errno != 0 || *cursor < '0' || *cursor > '9' || digits_end != field_end ||
			    value != (uintptr_t)value)
				return (-1);
			*(field == STAT_ARG_START ? start : end) = (uintptr_t)value;
		}
		cursor = field_end;
	}
	return (*start < *end ? 0 : -1);
}

/* Unknown bounds make every value "other": repeats then refuse, the safe side. */
static void read_arg_range(void)
{
	char line[2048];
	ssize_t got;
	size_t used = 0;
	int fd;

	arg_range.read = true;
	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		goto out;
	while (used < sizeof(line) - 1) {
		got = read(fd, line + used, sizeof(line) - 1 - used);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		used += (size_t)got;
	}
	close(fd);
	line[used] = '\0';
	if (parse_arg_range(line, &arg_range.start, &arg_range.end) < 0)
		arg_range.start = arg_range.end = 0;
out:
	if (arg_range.end == 0)
		extc_debug("cannot read the argument bounds in /proc/self/stat: "
			   "command-line values count as other values");
}

void extc_option_set_arg_range(const char *start, const char *end)
{
	arg_range.read = true;
	arg_range.start = (uintptr_t)start;
	arg_range.end = (uintptr_t)end;
}

static bool is_command_line(const char *optarg)
{
	uintptr_t at = (uintptr_t)optarg;

	if (!arg_range.read)
		read_arg_range();
	return (at >= arg_range.start && at < arg_range.end);
}

/*
 * Which source passes this value. srun, salloc and sbatch pass the job's
 * exported value with getenv()'s own pointer (spank_process_env_options),
 * before the command line in srun and salloc, after #SBATCH lines and
 * before the command line in sbatch, and again for each component of a
 * heterogeneous srun. An equal value as the very first call is taken as
 * inherited too, so that a Slurm which copied the value still lets the
 * command line win. Only the first: after it, an equal value is the user's
 * own (srun --ext-cache=job --ext-cache=local in a job-mode job is two
 * values, refused).
 */
static enum option_source source_of(int val, const char *optarg)
{
	const char *exported = getenv(inherited_env[val]);

	if (optarg == NULL)
		return (SOURCE_OTHER);
	if (exported != NULL && optarg == exported)
		return (SOURCE_INHERITED);
	if (is_command_line(optarg))
		return (SOURCE_COMMAND_LINE);
	if (exported != NULL && request[val].source == SOURCE_NONE && strcmp(optarg, exported) == 0)
		return (SOURCE_INHERITED);
	return (SOURCE_OTHER);
}

/*
 * As pyxis does: the same value twice is harmless, two different ones from
 * one source are a mistake. Across sources the higher one wins, as sbatch
 * lets its command line override #SBATCH lines.
 */
static int keep_value(int val, const char *kept, enum option_source source)
{
	if (source < request[val].source)
		return (0);
	if (source == request[val].source && source != SOURCE_INHERITED &&
	    strcmp(request[val].value, kept) != 0) {
		char first[96], second[96];

		extc_escape(request[val].value, 80, first, sizeof(first));
		extc_escape(kept, 80, second, sizeof(second));
		extc_error("%s=%s and %s=%s: given twice with different values; give it once",
			   option_names[val], first, option_names[val], second);
		return (-1);
	}
	request[val].source = source;
	memcpy(request[val].value, kept, sizeof(request[val].value));
	return (0);
}

/*
 * In srun/sbatch/salloc (remote == 0) a bad value stops the command before
 * anything is submitted. In slurmstepd the value is only stored: a failing
 * option callback there fails plugin initialisation, which drains the node
 * for a batch job, and a user must never be able to drain a node. The step
 * reports the bad value itself, where only the job fails. A value is kept
 * only once it is valid, so a refused first value never conflicts with a
 * corrected second one.
 */
static int option_cb(int val, const char *optarg, int remote)
{
	const char *value = optarg ? optarg : "";
	char kept[sizeof(request[0].value)];
	enum extc_mode mode;
	size_t keep;
	char why[EXTC_WHY_MAX];

	if (val < 0 || val >= OPT_COUNT)
		return (-1);
	memset(kept, 0, sizeof(kept));
	keep = val == OPT_MODE ? EXTC_MODE_VALUE_MAX + 2 : sizeof(kept);
	strncpy(kept, value, keep);
	kept[keep - 1] = '\0';
	if (remote) {
		request[val].source = SOURCE_OTHER;
		memcpy(request[val].value, kept, sizeof(kept));
		return (0);
	}
	if (val == OPT_MODE && extc_mode_parse(value, "--ext-cache", &mode, why, sizeof(why)) < 0) {
		extc_error("%s", why);
		return (-1);
	}
	if ((val == OPT_SEED || val == OPT_PUBLISH) &&
	    extc_warm_check_dir(value, option_names[val], why, sizeof(why)) < 0) {
		extc_error("%s", why);
		return (-1);
	}
	return (keep_value(val, kept, source_of(val, optarg)));
}

static struct spank_option options[OPT_COUNT] = {
	{
		.name = "ext-cache",
		.arginfo = "MODE",
		.usage = "Private node-local JIT cache (TORCH_EXTENSIONS_DIR, TRITON_CACHE_DIR, ...): "
			 "'local' per step, 'job' shared by the job's steps, 'off'. "
			 "Also read from SLURM_EXT_CACHE.",
		.has_arg = 1,
		.val = OPT_MODE,
		.cb = option_cb,
	},
	{
		.name = "ext-cache-seed",
		.arginfo = "DIR",
		.usage = "Fill the private cache from DIR (a published cache) before tasks start, "
			 "as you, keeping timestamps. Also read from SLURM_EXT_CACHE_SEED.",
		.has_arg = 1,
		.val = OPT_SEED,
		.cb = option_cb,
	},
	{
		.name = "ext-cache-publish",
		.arginfo = "DIR",
		.usage = "When the step ends on a node, copy its completed builds into DIR, "
			 "atomically. Also read from SLURM_EXT_CACHE_PUBLISH.",
		.has_arg = 1,
		.val = OPT_PUBLISH,
		.cb = option_cb,
	},
	{
		.name = "ext-cache-verbose",
		.arginfo = NULL,
		.usage = "Say on each node whether the step's cache started warm (from where, how "
			 "many files) or cold (why). Also read from SLURM_EXT_CACHE_VERBOSE=1.",
		.has_arg = 0,
		.val = OPT_VERBOSE,
		.cb = option_cb,
	},
};

int extc_option_register(spank_t sp)
{
	spank_err_t rc;
	size_t i;

	memset(&request, 0, sizeof(request));
	for (i = 0; i < OPT_COUNT; i++) {
		rc = spank_option_register(sp, &options[i]);
		if (rc != ESPANK_SUCCESS) {
			extc_error("cannot register --%s: %s", options[i].name,
				   spank_strerror(rc));
			return (-1);
		}
	}
	return (0);
}

const char *extc_option_value(void)
{
	return (request[OPT_MODE].source != SOURCE_NONE ? request[OPT_MODE].value : NULL);
}

const char *extc_option_seed(void)
{
	return (request[OPT_SEED].source != SOURCE_NONE ? request[OPT_SEED].value : NULL);
}

bool extc_option_verbose(void)
{
	return (request[OPT_VERBOSE].source != SOURCE_NONE);
}

const char *extc_option_publish(void)
{
	return (request[OPT_PUBLISH].source != SOURCE_NONE ? request[OPT_PUBLISH].value : NULL);
}
