/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: a step's directory on a noexec mount, where tools cannot load what they build. */
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/noexec.h"
#include "base/text.h"

/* the directory as the message shows it: the leaf is far shorter than this */
#define LEAF_SHOWN_MAX 400

enum extc_exec_probe extc_noexec_probe_fd(int fd)
{
	struct statvfs sv;

	if (fd < 0 || fstatvfs(fd, &sv) < 0)
		return (EXTC_EXEC_UNKNOWN);
	return ((sv.f_flag & ST_NOEXEC) ? EXTC_EXEC_NOEXEC : EXTC_EXEC_ALLOWED);
}

enum extc_exec_probe extc_noexec_probe_path(const char *path)
{
	enum extc_exec_probe probe;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	probe = extc_noexec_probe_fd(fd);
	if (fd >= 0)
		close(fd);
	return (probe);
}

const char *extc_noexec_first_loader(const struct extc_config *cfg, const bool *exported)
{
	size_t i;

	for (i = 0; i < cfg->nvars; i++) {
		if (cfg->vars[i].loads_code && (exported == NULL || exported[i]))
			return (cfg->vars[i].name);
	}
	return (NULL);
}

enum extc_noexec_action extc_noexec_decide(enum extc_exec_probe probe, const char *leaf,
					   const struct extc_config *cfg, const bool *exported,
					   bool user_asked, char *why, size_t whylen)
{
	char shown[4 * LEAF_SHOWN_MAX + 8];	/* escaping takes up to four bytes a byte */
	const char *var;

	if (probe != EXTC_EXEC_NOEXEC)
		return (EXTC_NOEXEC_FINE);
	var = extc_noexec_first_loader(cfg, exported);
	if (var == NULL)
		return (EXTC_NOEXEC_FINE);
	extc_escape(leaf, LEAF_SHOWN_MAX, shown, sizeof(shown));
	extc_fmt(why, whylen, "%s is on a noexec mount: the code %s's tool builds there cannot be "
		 "loaded (\"failed to map segment from shared object\")", shown, var);
	return (extc_config_on_error_fails(cfg->on_error, user_asked) ? EXTC_NOEXEC_FAIL : EXTC_NOEXEC_WARN);
}
