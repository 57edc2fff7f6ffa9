/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spank-ext-cache: the removal engine's limits and report: defaults, sums and one log-ready sentence. */
#include <stdio.h>
#include <string.h>

#include "fs/fs_rm.h"
#include "base/text.h"

const char extc_rm_not_expected[] = "another directory has taken its name";

void extc_rm_limits_default(struct extc_rm_limits *limits)
{
	limits->max_fds = 32;
	limits->max_depth = 1u << 20;
	limits->max_entries = 0;
	limits->deadline_ns = 0;
	limits->detach_mounts = false;
}

void extc_rm_report_stop(struct extc_rm_report *report, int err, const char *why)
{
	if (report->stopped == NULL) {
		report->stopped = why;
		report->stop_errno = err;
	}
}

void extc_rm_report_add(struct extc_rm_report *sum, const struct extc_rm_report *part)
{
	sum->removed += part->removed;
	sum->failed += part->failed;
	sum->mounts += part->mounts;
	sum->detached += part->detached;
	if (sum->foreign == 0 && part->foreign != 0)
		memcpy(sum->first_foreign, part->first_foreign, sizeof(sum->first_foreign));
	sum->foreign += part->foreign;
	if (sum->first_errno == 0 && part->first_errno != 0) {
		sum->first_errno = part->first_errno;
		memcpy(sum->first_name, part->first_name, sizeof(sum->first_name));
	}
	if (sum->stopped == NULL) {
		sum->stopped = part->stopped;
		sum->stop_errno = part->stop_errno;
	}
}

void extc_rm_report_text(const struct extc_rm_report *r, char *buf, size_t len)
{
	char err[160] = "", stop_err[80] = "", kept[200] = "", detached[64] = "";

	if (r->first_errno != 0)
		extc_fmt(err, sizeof(err), "; first error: %s: %s", r->first_name,
			 strerror(r->first_errno));
	if (r->foreign != 0)
		extc_fmt(kept, sizeof(kept), "; left %llu director%s of other users whole (first: %s)",
			 (unsigned long long)r->foreign, r->foreign == 1 ? "y" : "ies", r->first_foreign);
	if (r->detached != 0)
		extc_fmt(detached, sizeof(detached), ", detached %llu",
			 (unsigned long long)r->detached);
	if (r->stopped != NULL && r->stop_errno != 0)
		extc_fmt(stop_err, sizeof(stop_err), ": %s", strerror(r->stop_errno));
	extc_fmt(buf, len,
		 "removed %llu, could not remove %llu, mount points left alone %llu%s%s%s%s%s%s",
		 (unsigned long long)r->removed, (unsigned long long)r->failed,
		 (unsigned long long)r->mounts, detached, err, kept, r->stopped ? "; stopped: " : "",
		 r->stopped ? r->stopped : "", stop_err);
}
